"""The model methods transformers / peft scripts call (round 28; each was an AttributeError
or a TypeError): ``num_parameters(only_trainable=, exclude_embeddings=)``,
``get_nb_trainable_parameters``, ``print_trainable_parameters`` (peft's line, the same
numbers on the same adapters), ``merge_and_unload``, ``enable_input_require_grads``,
``config.use_cache``."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora, has_lora, load_adapter

from .ernie_reference import make_checkpoint, random_ids, torch

peft = pytest.importorskip("peft")

CASES = [("dense-gqa-tied", dict(target_modules=["q_proj", "v_proj"])),
         ("dense-mha-untied-bias", dict(target_modules="all-linear")),
         ("dense-gqa-tied", dict(target_modules=["q_proj"], modules_to_save=["lm_head"])),
         ("moe-shared", dict(target_modules=["q_proj"],
                             target_parameters=["mlp.experts.gate_up_proj",
                                                "mlp.experts.down_proj"]))]


@pytest.mark.parametrize("shape,kw", CASES)
def test_counts_and_merge_as_peft(tmp_path, capsys, shape, kw):
    folder, ref = make_checkpoint(tmp_path, shape)
    model = from_pretrained(folder)
    for only in (False, True):
        for emb in (False, True):
            assert model.num_parameters(only_trainable=only, exclude_embeddings=emb) == \
                ref.num_parameters(only_trainable=only, exclude_embeddings=emb)
    assert model.config.use_cache is ref.config.use_cache is True
    pm = peft.get_peft_model(ref, peft.LoraConfig(r=4, lora_alpha=8, **kw))
    targets = kw["target_modules"] if isinstance(kw["target_modules"], str) else \
        kw["target_modules"] + [p.removeprefix("mlp.") for p in kw.get("target_parameters", [])]
    apply_lora(model, r=4, alpha=8, target_modules=targets,
               modules_to_save=kw.get("modules_to_save"))
    assert model.get_nb_trainable_parameters() == pm.get_nb_trainable_parameters()
    pm.print_trainable_parameters()
    theirs = capsys.readouterr().out
    model.print_trainable_parameters()
    assert capsys.readouterr().out == theirs
    model.enable_input_require_grads()
    pm.enable_input_require_grads()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # non-zero adapters, so the merge shows; skiff reads peft's folder
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    pm.save_pretrained(tmp_path / "adapter")
    model = load_adapter(from_pretrained(folder), tmp_path / "adapter")
    merged = model.merge_and_unload()
    assert merged is model and not has_lora(model)
    ids = random_ids(model.config.vocab_size, (2, 7), seed=3)
    with torch.no_grad():
        want = pm.merge_and_unload()(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(np.asarray(merged(ids).numpy()), want,
                               atol=1e-4 * np.abs(want).max())
    with pytest.raises(ValueError, match="no LoRA adapters"):
        model.merge_and_unload()

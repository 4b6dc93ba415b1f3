"""A loaded model is in evaluation mode, as transformers' ``from_pretrained`` gives it
(round 29): skiff's came in training mode, so a peft adapter trained with ``lora_dropout``
gave random logits after ``load_adapter`` where ``PeftModel.from_pretrained`` gives fixed
ones (2.3 apart on the probe's logits of scale 7). Now equal to peft's (1e-5) until
``model.train()``, which turns the dropout on as in peft."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import load_adapter

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")


def test_from_pretrained_is_in_eval_mode_as_transformers(tmp_path):
    folder, _ = make_checkpoint(tmp_path, "moe-shared")
    want = transformers.AutoModelForCausalLM.from_pretrained(folder).training
    model = from_pretrained(folder)
    assert model.training is want is False
    assert not any(m.training for m in model.modules())


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "dense-mha-untied-bias"])
def test_adapter_with_dropout_loads_as_peft(tmp_path, shape):
    folder, ref = make_checkpoint(tmp_path / "base", shape)
    pm = peft.get_peft_model(ref, peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.3,
                                                  target_modules="all-linear"))
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    pm.save_pretrained(tmp_path / "adapter")
    loaded = peft.PeftModel.from_pretrained(
        transformers.AutoModelForCausalLM.from_pretrained(folder), tmp_path / "adapter")
    model = load_adapter(from_pretrained(folder), tmp_path / "adapter")
    ids = random_ids(model.config.vocab_size, (2, 7), seed=3)
    with torch.no_grad():
        want = loaded(torch.tensor(ids)).logits.numpy()
    assert loaded.training is model.training is False
    for _ in range(2):  # no dropout: the same logits each call, peft's
        np.testing.assert_allclose(np.asarray(model(ids).numpy()), want,
                                   atol=1e-5 * np.abs(want).max())
    model.train()  # as peft after .train(): the dropout draws
    a, b = (np.asarray(model(ids).numpy()) for _ in range(2))
    assert np.abs(a - b).max() > 1e-3

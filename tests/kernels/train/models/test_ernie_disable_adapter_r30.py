"""peft's ``with model.disable_adapter():`` and transformers' ``model.load_adapter(folder)``
(round 30; each was an AttributeError): the base model's logits and greedy tokens inside the
block (a DPO/KL reference model without a second copy), the adapter's outside it, against
peft's ``PeftModel`` on the adapter skiff saved: attention and expert adapters, DoRA, dense
and MoE."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")

CASES = [("dense-gqa-tied", ["q_proj", "v_proj", "gate_proj"], False),
         ("dense-mha-untied-bias", ["q_proj", "o_proj", "down_proj"], True),
         ("moe-shared", ["q_proj", "v_proj", "experts.gate_up_proj", "experts.down_proj"],
          False)]


@pytest.mark.parametrize("shape,targets,dora", CASES)
def test_disable_adapter_as_peft(tmp_path, shape, targets, dora):
    folder, _ = make_checkpoint(tmp_path / "base", shape)
    model = from_pretrained(folder)
    skiff.models.apply_lora(model, r=4, alpha=8, target_modules=targets, use_dora=dora)
    rng = np.random.default_rng(0)
    for name, p in model.named_parameters():
        if "lora_B" in name or "magnitude" in name:  # a trained-looking adapter
            p._data = p._data + rng.normal(0, 0.3, p.shape).astype(p._data.dtype)
    skiff.models.save_adapter(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    pm = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    ids = random_ids(model.config.vocab_size, (2, 7), seed=3)
    t = torch.tensor(ids)
    with torch.no_grad():
        adapted = pm(t).logits.numpy()
        with pm.disable_adapter():
            plain = pm(t).logits.numpy()
            plain_gen = pm.generate(input_ids=t, max_new_tokens=5, do_sample=False).numpy()
    assert np.abs(adapted - plain).max() > 0.1  # the adapter matters
    tol = 1e-4 * max(1, np.abs(plain).max())
    with model.disable_adapter():
        np.testing.assert_allclose(model(ids).numpy(), plain, atol=tol)
        np.testing.assert_array_equal(np.asarray(model.generate(ids, max_new_tokens=5,
                                                                do_sample=False)), plain_gen)
    np.testing.assert_allclose(model(ids).numpy(), adapted, atol=tol)  # on again after
    model.disable_adapters()
    np.testing.assert_allclose(model(ids).numpy(), plain, atol=tol)
    model.enable_adapters()
    # transformers' model.load_adapter(folder) on a fresh base
    fresh = from_pretrained(folder)
    assert fresh.load_adapter(tmp_path / "adapter") is fresh
    np.testing.assert_allclose(fresh(ids).numpy(), adapted, atol=tol)


def test_disable_adapter_mistakes(tmp_path):
    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    with pytest.raises(ValueError, match="no LoRA adapters"):
        with model.disable_adapter():
            pass
    # with modules_to_save: their base values (round 30b; test_ernie_disable_saved_r30b)

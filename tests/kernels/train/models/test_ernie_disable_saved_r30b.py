"""peft's ``with model.disable_adapter():`` with ``modules_to_save`` or trainable tokens
(round 30b; was "their base values are not kept"): inside the block the saved modules are
their values from before training and the trainable tokens their table's rows, as peft's
original modules; outside, the trained ones (the same Parameter objects an optimizer
holds). Logits and greedy tokens against peft's ``PeftModel`` on the adapter skiff saved,
tied and untied heads, dense and MoE."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")

CASES = [("dense-gqa-tied", {"modules_to_save": ["lm_head"]}),
         ("dense-mha-untied-bias", {"modules_to_save": ["embed_tokens", "model.norm"]}),
         ("dense-gqa-tied", {"trainable_token_indices": [3, 7, 11]}),
         ("moe-shared", {"modules_to_save": ["model.norm"], "trainable_token_indices": [5, 9]})]


@pytest.mark.parametrize("shape,extra", CASES)
def test_disable_adapter_with_saved_modules_as_peft(tmp_path, shape, extra):
    folder, _ = make_checkpoint(tmp_path / "base", shape)
    model = from_pretrained(folder)
    skiff.models.apply_lora(model, r=4, alpha=8, target_modules=["q_proj", "v_proj"], **extra)
    rng = np.random.default_rng(0)
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    for name, p in trained:  # a trained-looking adapter, saved modules and tokens
        if "lora_A" not in name:
            p._data = p._data + rng.normal(0, 0.3, p.shape).astype(p._data.dtype)
    skiff.models.save_adapter(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    pm = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    ids = random_ids(model.config.vocab_size, (2, 7), seed=3)
    ids[:, 2] = 5 if "moe" in shape else 3  # an adapted token, when there are some
    t = torch.tensor(ids)
    with torch.no_grad():
        adapted = pm(t).logits.numpy()
        with pm.disable_adapter():
            plain = pm(t).logits.numpy()
            plain_gen = pm.generate(input_ids=t, max_new_tokens=4, do_sample=False).numpy()
    tol = 1e-4 * max(1, np.abs(plain).max())
    np.testing.assert_allclose(model(ids).numpy(), adapted, atol=tol)
    assert np.abs(adapted - plain).max() > 0.1  # the saved modules / tokens matter
    with model.disable_adapter():
        np.testing.assert_allclose(model(ids).numpy(), plain, atol=tol)
        np.testing.assert_array_equal(np.asarray(model.generate(ids, max_new_tokens=4,
                                                                do_sample=False)), plain_gen)
    np.testing.assert_allclose(model(ids).numpy(), adapted, atol=tol)  # on again after
    now = dict(model.named_parameters())
    assert all(now[n] is p for n, p in trained)  # the optimizer's Parameters are back
    model.disable_adapters()
    model.disable_adapters()  # twice: still the base, and enable brings the trained back
    np.testing.assert_allclose(model(ids).numpy(), plain, atol=tol)
    model.enable_adapters()
    np.testing.assert_allclose(model(ids).numpy(), adapted, atol=tol)

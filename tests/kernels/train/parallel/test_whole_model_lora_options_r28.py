"""The whole model a split strategy gathers to save keeps every LoRA option.

``parallel.ernie_tensor.whole_model`` rebuilt the adapters from r / alpha / targets / dropout
only, so a DoRA, rsLoRA, rank-pattern or ``modules_to_save`` run saved under tp or ep lost
them (the gathered weights did not even load). Oracle: the model the weights came from.
"""
from __future__ import annotations

import numpy as np

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora
from skiff.kernels.train.parallel.ernie_tensor import whole_model

from ..models.ernie_reference import make_checkpoint, random_ids


def test_whole_model_keeps_dora_rslora_patterns_and_modules_to_save(tmp_path):
    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    apply_lora(model, r=4, alpha=8, target_modules=["q_proj", "v_proj"], use_dora=True,
               use_rslora=True, modules_to_save=["lm_head"], rank_pattern={"q_proj": 2})
    rng = np.random.default_rng(0)
    for p in model.parameters():
        if p.requires_grad:
            p.data[...] = p.numpy() + rng.normal(0, 0.05, p.shape).astype(np.float32)
    weights = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v)
               for k, v in model.state_dict().items()}
    whole = whole_model(model, weights)
    assert sorted(dict(whole.named_parameters())) == sorted(dict(model.named_parameters()))
    ids = random_ids(model.config.vocab_size, (1, 6), seed=3)
    np.testing.assert_allclose(np.asarray(whole(ids).numpy()), np.asarray(model(ids).numpy()),
                               atol=1e-6)

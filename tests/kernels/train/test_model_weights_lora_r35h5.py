"""Round 35 (h5): ``model_weights`` of a one-process LoRA fine-tune's checkpoint loads.

``model.load_state_dict("ck/step-N.npz")`` took such a checkpoint (its frozen base checked
and counted as present), but ``model.load_state_dict(model_weights(...))`` (what the error
for a checkpoint folder tells a user to do) gave back a plain dict of the trained weights
and said the base's keys were missing. The oracle: the trained model's own weights."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora
from skiff.kernels.train.parallel.model_weights import model_weights
from skiff.kernels.train.trainer import Trainer

from .models.ernie_reference import make_checkpoint


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora_one")
    make_checkpoint(root / "base", "dense-gqa-tied")
    train_random.seed(5)
    model = apply_lora(from_pretrained(root / "base"), r=4, alpha=8)
    ids = np.random.default_rng(6).integers(3, 78, (8, 9))
    Trainer(model, lr=5e-3, batch_size=4, seed=1, checkpoint_dir=root / "ck").train(
        ArrayDataset(ids[:, :-1], ids[:, 1:]), steps=2)
    return root, {k: np.asarray(v) for k, v in model.state_dict().items()}


def _same(model, want):
    got = model.state_dict()
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_array_equal(np.asarray(got[k]), want[k], err_msg=k)


@pytest.mark.parametrize("with_model", [False, True])
def test_model_weights_of_a_fine_tune_loads(run, with_model):
    root, want = run
    model = apply_lora(from_pretrained(root / "base"), r=4, alpha=8)
    weights = model_weights(root / "ck", model if with_model else None)
    assert len(weights) < len(want) or with_model
    model.load_state_dict(weights)
    _same(model, want)


def test_another_base_is_said(run, tmp_path):
    root, _ = run
    make_checkpoint(tmp_path / "other", "dense-gqa-tied", seed=1)
    other = apply_lora(from_pretrained(tmp_path / "other"), r=4, alpha=8)
    with pytest.raises(ValueError, match="base"):
        other.load_state_dict(model_weights(root / "ck"))
    with pytest.raises(ValueError, match="base"):
        model_weights(root / "ck", other)

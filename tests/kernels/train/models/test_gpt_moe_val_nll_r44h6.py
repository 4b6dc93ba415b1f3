"""``val_nll`` for the built-in ``gpt-moe`` (round 44, h6).

Its loss (``parallel/moe.py``) is the next-token NLL plus ``aux_coef`` x its MoE layers'
balancing losses, so ``--val-split``'s ``val_loss`` carries the term; round 43 gave an
ERNIE-4.5 MoE ``val_nll`` beside it, ``gpt-moe`` got none (its held-out NLL could not be
read beside a dense GPT's ``val_loss``). Oracle: torch's cross-entropy of the model's logits,
batch by batch (the experts' capacity depends on the batch), over every target.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def test_gpt_moe_val_nll_is_torch_cross_entropy():
    from skiff.kernels.train import models
    from skiff.kernels.train.data import ArrayDataset
    from skiff.kernels.train.trainer import Trainer

    model = models.get("gpt-moe")
    model.aux_coef = 0.5  # a term well above the noise (the default is 0.01)
    V = model.config.vocab_size
    x = np.random.default_rng(0).integers(0, V, (3, 16))
    y = np.roll(x, -1, axis=1)
    val = Trainer(model, batch_size=2).evaluate(ArrayDataset(x, y))
    model.eval()
    total = 0.0
    for rows in (slice(0, 2), slice(2, 3)):  # the loop's batches
        logits = torch.tensor(np.asarray(model(x[rows]).numpy()))
        total += torch.nn.functional.cross_entropy(
            logits.reshape(-1, V), torch.tensor(y[rows]).reshape(-1), reduction="sum").item()
    want = total / y.size
    assert abs(val["val_nll"] - want) <= 2e-6 * want, (val, want)
    assert val["val_loss"] - val["val_nll"] > 0.5, val  # 0.5 x the layers' terms (~1 each)
    model.aux_coef = 0.0  # no term: val_loss is the NLL, one name for one figure
    assert "val_nll" not in Trainer(model, batch_size=2).evaluate(ArrayDataset(x, y))

"""A regression trained in bf16-mixed keeps its float targets in float32, as
``torch.autocast`` does (the model runs in 16 bits, the MSE compares with the exact targets).

Found by a user: an MLP regression with ``precision="bf16-mixed"`` failed at its first step
("targets must be integer class ids (cross-entropy) or floats (MSE), got dtype bfloat16").
The model here outputs exactly 300 in any precision (zero weights, bias 300), so the oracle
is the float64 MSE against the float32 targets, which lie within ~0.3 of 300, where bf16's
step is 2: rounding them changes the loss by far more than the tolerance. (fp16-mixed too, since
round 27: the output is cast to float32 for the loss; test_fp16_loss_scale_r27.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core.tensor import _as_dtype
from skiff.nn import Linear, Sequential


@pytest.mark.parametrize("precision, half", [("bf16-mixed", "bfloat16"),
                                             ("fp16-mixed", "float16")])
def test_first_loss_is_the_mse_against_float32_targets(precision, half):
    model = Sequential(Linear(4, 1))
    model[0].weight._data[...] = 0.0
    model[0].bias._data[...] = 300.0
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (300.0 + 0.1 * rng.standard_normal((64, 1))).astype(np.float32)
    want = float(((300.0 - y.astype(np.float64)) ** 2).mean())
    rounded = float(((300.0 - y.astype(_as_dtype(half)).astype(np.float64)) ** 2).mean())
    assert abs(rounded - want) > 0.05 * want  # the check below can tell them apart
    trainer = skiff.Trainer(model, precision=precision, batch_size=64, shuffle=False,
                            schedule="constant", clip=None)
    got = trainer.train((x, y), steps=1).history[0]["loss"]
    assert abs(got - want) < 1e-3 * want, (got, want, rounded)

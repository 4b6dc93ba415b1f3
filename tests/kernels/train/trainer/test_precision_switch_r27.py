"""A run resumed from its checkpoint in another precision takes the float32 masters.

Found by a user: a fp16-mixed run resumed in bf16-mixed (or the reverse) failed ("the
checkpoint was trained in fp16-mixed precision, this run asks for bf16-mixed"), and one resumed
in float32 took the float16 weights (the masters rounded, up to 1.2e-4 off) where torch, whose
parameters stay float32 under autocast, resumes with the exact float32 weights. The oracle is
the float32 masters the stopped run held (what torch's parameters would be), read from that
run; each check tells them from their 16-bit rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core.tensor import _as_dtype
from skiff.nn import Linear, ReLU, Sequential


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    return x, (x.sum(1) > 0).astype(np.int64)


def _trainer(precision, folder, resume, seed):
    skiff.seed(seed)  # the resumed run starts from other weights: the checkpoint must win
    return skiff.Trainer(Sequential(Linear(8, 32), ReLU(), Linear(32, 2)), precision=precision,
                         batch_size=16, lr=1e-2, checkpoint_dir=folder, resume=resume)


@pytest.mark.parametrize("first, then", [("fp16-mixed", "32"), ("bf16-mixed", "32"),
                                         ("fp16-mixed", "bf16-mixed"),
                                         ("bf16-mixed", "fp16-mixed")])
def test_resumed_in_another_precision_takes_the_float32_masters(tmp_path, first, then):
    x, y = _data()
    stopped = _trainer(first, tmp_path, False, 0)
    stopped.train((x, y), steps=3)
    want = [m.numpy().copy() for m in stopped.mixed.master_params()]
    half = _as_dtype({"fp16-mixed": "float16", "bf16-mixed": "bfloat16"}[first])
    assert any(not np.array_equal(w.astype(half).astype(np.float32), w) for w in want)

    again = _trainer(then, tmp_path, True, 1)
    result = again.train((x, y), steps=3)  # resumes at step 3: nothing left to run
    assert result.resumed["from_step"] == 3
    got = again.mixed.master_params() if again.mixed is not None else again.model.parameters()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)
    if then == "fp16-mixed":  # a bf16 checkpoint has no scaler: fp16 starts at torch's 2^16
        assert again.mixed.loss_scale == 2.0 ** 16
    more = again.train((x, y), steps=5).history  # and it trains on
    assert len(more) == 5 and np.isfinite(more[-1]["loss"])

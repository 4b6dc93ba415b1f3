"""Every op's backward against float64 finite differences, over shape x dtype x backend.

float64 cases run :func:`skiff.kernels.train.core.gradcheck.gradcheck`; float32 cases check that
the float32 gradients agree with the float64 ones (the same code path at lower precision).
"""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core import tensor as T
from skiff.kernels.train.core.gradcheck import gradcheck
from skiff.kernels.train.core.tensor import Tensor

from .op_cases import CASES


def _inputs(case, xp, dtype, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for spec in case["inputs"]:
        kind, shape = spec[0], spec[1]
        if kind == "int":
            arr = rng.integers(0, spec[2], size=shape)
            out.append(Tensor(xp.asarray(arr)))
            continue
        if kind == "bool":
            out.append(Tensor(xp.asarray(rng.random(shape) < 0.5)))
            continue
        x = rng.standard_normal(shape)
        if kind == "pos":
            x = np.abs(x) + 0.5
        elif kind == "away":  # away from kinks (relu, abs, max ties)
            x = np.sign(x) * (np.abs(x) + 0.2) + rng.permutation(x.size).reshape(shape) * 1e-2
        out.append(Tensor(xp.asarray(x), dtype=dtype, requires_grad=True))
    return out


IDS = [c["name"] for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_float64_finite_differences(case, xp):
    inputs = _inputs(case, xp, "float64")
    assert gradcheck(case["fn"], inputs, eps=1e-6, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_float32_agrees_with_float64(case, xp):
    grads = {}
    for dtype in ("float64", "float32"):
        inputs = _inputs(case, xp, dtype)
        out = case["fn"](*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        rng = np.random.default_rng(1)
        total = None
        for o in outs:
            w = Tensor(xp.asarray(rng.standard_normal(o.shape)), dtype=o.dtype)
            term = (o * w).sum()
            total = term if total is None else total + term
        total.backward()
        grads[dtype] = [t.grad for t in inputs if t.requires_grad]
        for g in grads[dtype]:
            assert g is not None and g.dtype == np.dtype(dtype)
    for g32, g64 in zip(grads["float32"], grads["float64"]):
        g32, g64 = T.as_array(g32, device="cpu"), T.as_array(g64, device="cpu", dtype="float64")
        scale = np.abs(g64).max() + 1e-12
        np.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-4 * scale)

"""Round 34 (h4): the depthwise kernels as flat runs over stride phases (docs/convolution.md,
"Round 34"): torch 2.13 values and gradients at strides 1-3 in each direction, odd sizes,
kernels 1x1-5x5, multipliers; the numba ops against their plain reference twins."""

import numpy as np
import pytest

import skiff.nn.functional as F
from skiff import Tensor
from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.nn.functional.conv_depthwise import (
    depthwise_conv_bwd,
    depthwise_conv_fwd,
)

torch = pytest.importorskip("torch")

CASES = [  # (N, C, H, W), multiplier, (kh, kw), stride, padding
    ((2, 3, 9, 7), 1, (3, 3), (2, 2), 1),
    ((2, 3, 10, 10), 1, (3, 3), (2, 2), 0),
    ((1, 2, 11, 13), 2, (5, 5), (2, 2), 2),
    ((2, 2, 9, 12), 1, (3, 3), (3, 3), 1),
    ((2, 2, 8, 9), 1, (3, 5), (1, 2), (1, 2)),
    ((2, 2, 9, 8), 1, (5, 3), (2, 1), (2, 1)),
    ((1, 3, 7, 7), 1, (1, 1), (2, 2), 0),
    ((3, 4, 5, 6), 1, (3, 3), (1, 1), 1),
    ((1, 2, 4, 4), 1, (3, 3), (2, 2), 1),  # 2x2 outputs
]


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("xs,mult,k,stride,padding", CASES)
def test_depthwise_strides_match_torch(xs, mult, k, stride, padding, dtype):
    rng = np.random.default_rng(0)
    n, c = xs[:2]
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal((c * mult, 1) + k).astype(dtype)
    b = rng.standard_normal(c * mult).astype(dtype)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.conv2d(tx, tw, tb, stride=stride, padding=padding, groups=c)
    g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(g))
    dt = np.dtype(dtype).name
    sx, sw, sb = (Tensor(a, dtype=dt, requires_grad=True) for a in (x, w, b))
    sy = F.conv2d(sx, sw, sb, stride=stride, padding=padding, groups=c)
    sy.backward(Tensor(g, dtype=dt))
    tol = 1e-12 if dtype == np.float64 else 2e-6
    for s, t in ((sy, ty), (sx.grad, tx.grad), (sw.grad, tw.grad), (sb.grad, tb.grad)):
        assert _rel(s.detach().numpy() if hasattr(s, "detach") else s.numpy(),
                    t.detach().numpy()) < tol


@pytest.mark.skipif(not numba_available(), reason="numba missing")
@pytest.mark.parametrize("sh,sw,k", [(2, 2, (3, 3)), (3, 2, (5, 3)), (1, 3, (3, 4)),
                                     (1, 1, (5, 5)), (2, 1, (1, 1))])
def test_numba_twin_matches_reference_strided(sh, sw, k):
    rng = np.random.default_rng(3)
    xt = rng.standard_normal((4, 3, 13, 12))
    w = rng.standard_normal((4,) + k)
    ho, wo = (13 - k[0]) // sh + 1, (12 - k[1]) // sw + 1
    assert check_op(depthwise_conv_fwd, xt, w, sh, sw, ho, wo, require_fast=True,
                    rtol=1e-12, atol=1e-12)
    g = rng.standard_normal((4, 3, ho, wo))
    assert check_op(depthwise_conv_bwd, g, xt, w, sh, sw, True, True, require_fast=True,
                    rtol=1e-12, atol=1e-12)

"""Conv2d and pooling on odd shapes against PyTorch (CPU, float64), plus finite differences.

The fast paths (channels-first im2col into one GEMM, non-overlapping col2im by assignment,
max-pool indices from running comparisons) branch on stride, padding and window overlap;
these cases reach every branch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.gradcheck import gradcheck
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.nn import fused
from skiff.kernels.train.core.tensor import Tensor


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


CONV = [  # (N, C, H, W), (Cout, kh, kw), stride, padding
    ((2, 3, 7, 6), (4, 3, 3), 2, 1),      # stride 2 on odd height
    ((1, 2, 9, 5), (3, 5, 5), 1, 2),      # padding 2, non-square
    ((2, 2, 6, 6), (3, 2, 2), 2, 0),      # windows tile the input exactly (scatter path)
    ((2, 2, 7, 5), (2, 1, 3), (2, 1), (0, 1)),  # rectangular kernel, uneven stride/pad
    ((3, 4, 5, 5), (2, 1, 1), 1, 0),      # 1x1: no im2col
    ((2, 1, 8, 7), (2, 2, 3), 3, 1),      # stride > kernel height: gaps
]


@pytest.mark.parametrize("xs,ws,stride,padding", CONV)
def test_conv2d_matches_torch(xs, ws, stride, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs)
    w = rng.standard_normal((ws[0], xs[1], ws[1], ws[2]))
    b = rng.standard_normal(ws[0])
    ts = [Tensor(a, dtype="float64", requires_grad=True) for a in (x, w, b)]
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    y = F.conv2d(*ts, stride=stride, padding=padding)
    yt = torch.nn.functional.conv2d(*tt, stride=stride, padding=padding)
    assert _rel(y.numpy(), yt.detach().numpy()) <= 1e-10
    g = rng.standard_normal(yt.shape)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    for a, at in zip(ts, tt, strict=True):
        assert _rel(a.grad, at.grad.numpy()) <= 1e-10


@pytest.mark.parametrize("xs,ws,stride,padding", CONV[:4])
def test_conv2d_gradcheck(xs, ws, stride, padding):
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal(xs), dtype="float64", requires_grad=True)
    w = Tensor(rng.standard_normal((ws[0], xs[1], ws[1], ws[2])), dtype="float64",
               requires_grad=True)
    assert gradcheck(lambda a, b: F.conv2d(a, b, None, stride=stride, padding=padding), [x, w])


def test_conv2d_float32_stays_float32():
    x = Tensor(np.ones((1, 2, 5, 5), np.float32))
    w = Tensor(np.ones((3, 2, 3, 3), np.float32), requires_grad=True)
    y = F.conv2d(x, w, None, padding=1)
    assert y.dtype == np.float32
    y.sum().backward()
    assert w.grad.dtype == np.float32


POOL = [((2, 3, 7, 7), 2, None), ((1, 2, 9, 6), 3, 2), ((2, 2, 6, 8), (2, 3), (2, 3)),
        ((1, 2, 5, 7), 2, 1), ((1, 1, 11, 11), 4, 3)]


@pytest.mark.parametrize("xs,k,s", POOL)
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pools_match_torch(kind, xs, k, s):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(xs)
    if kind == "max":  # ties: torch and skiff both take the first offset in a window
        x[0, 0, :2, :2] = 1.5
    a = Tensor(x, dtype="float64", requires_grad=True)
    at = torch.tensor(x, requires_grad=True)
    ours = F.max_pool2d if kind == "max" else F.avg_pool2d
    theirs = torch.nn.functional.max_pool2d if kind == "max" else torch.nn.functional.avg_pool2d
    y = ours(a, k, s)
    yt = theirs(at, k, s)
    assert _rel(y.numpy(), yt.detach().numpy()) <= 1e-12
    g = rng.standard_normal(yt.shape)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    assert _rel(a.grad, at.grad.numpy()) <= 1e-12


def test_conv_pool_chain_of_views_matches_torch():
    """conv returns a channels-first view; pool, batch norm and a second conv consume it."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 8, 8))
    w1, w2 = rng.standard_normal((4, 2, 3, 3)), rng.standard_normal((5, 4, 3, 3))
    ts = [Tensor(a, dtype="float64", requires_grad=True) for a in (x, w1, w2)]
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w1, w2)]

    def ours(a, b, c):
        h = F.max_pool2d(F.relu(F.conv2d(a, b, None, padding=1)), 2)
        h = F.batch_norm(h, None, None, training=True)
        return F.conv2d(h, c, None, stride=2, padding=1)

    def theirs(a, b, c):
        tf = torch.nn.functional
        h = tf.max_pool2d(tf.relu(tf.conv2d(a, b, padding=1)), 2)
        h = tf.batch_norm(h, None, None, training=True)
        return tf.conv2d(h, c, stride=2, padding=1)

    y, yt = ours(*ts), theirs(*tt)
    assert _rel(y.numpy(), yt.detach().numpy()) <= 1e-9
    g = rng.standard_normal(yt.shape)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    for a, at in zip(ts, tt, strict=True):
        assert _rel(a.grad, at.grad.numpy()) <= 1e-9


TOL = {np.float32: (1e-5, 1e-6), np.float64: (1e-12, 1e-13)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k,s,hw", [((3, 3), (1, 1), (7, 6)), ((5, 2), (2, 3), (9, 8)),
                                    ((2, 2), (2, 2), (6, 4))])
def test_col2im_twins(dtype, k, s, hw):
    rng = np.random.default_rng(4)
    ho, wo = (hw[0] - k[0]) // s[0] + 1, (hw[1] - k[1]) // s[1] + 1
    gcols = rng.standard_normal((3, k[0], k[1], 2, ho, wo)).astype(dtype)
    rtol, atol = TOL[dtype]
    names = check_op(fused.col2im, gcols, hw[0], hw[1], s[0], s[1], rtol=rtol, atol=atol,
                     require_fast=numba_available())
    assert names == (["numba"] if numba_available() else [])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k,s,hw", [((2, 2), (2, 2), (8, 6)), ((3, 3), (2, 2), (9, 7)),
                                    ((2, 3), (1, 2), (5, 9))])
def test_max_pool_bwd_twins(dtype, k, s, hw):
    rng = np.random.default_rng(5)
    ho, wo = (hw[0] - k[0]) // s[0] + 1, (hw[1] - k[1]) // s[1] + 1
    g = rng.standard_normal((2, 3, ho, wo)).astype(dtype)
    arg = rng.integers(0, k[0] * k[1], size=g.shape).astype(np.int8)
    rtol, atol = TOL[dtype]
    names = check_op(fused.max_pool_bwd, g, arg, hw[0], hw[1], k[0], k[1], s[0], s[1],
                     rtol=rtol, atol=atol, require_fast=numba_available())
    assert names == (["numba"] if numba_available() else [])


@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_on_conv_output_matches_torch(training):
    """Batch norm of conv2d's channels-first view, train and eval, against torch."""
    rng = np.random.default_rng(6)
    x, wc = rng.standard_normal((3, 2, 6, 5)), rng.standard_normal((4, 2, 3, 3))
    gamma, beta = rng.standard_normal(4), rng.standard_normal(4)
    rm, rv = rng.standard_normal(4), rng.random(4) + 0.5
    ts = [Tensor(a, dtype="float64", requires_grad=True) for a in (x, wc, gamma, beta)]
    tt = [torch.tensor(a, requires_grad=True) for a in (x, wc, gamma, beta)]
    rms, rvs = rm.copy(), rv.copy()
    rmt, rvt = torch.tensor(rm), torch.tensor(rv)
    y = F.batch_norm(F.conv2d(ts[0], ts[1], None, padding=1), rms, rvs, ts[2], ts[3],
                     training=training)
    yt = torch.nn.functional.batch_norm(torch.nn.functional.conv2d(tt[0], tt[1], padding=1),
                                        rmt, rvt, tt[2], tt[3], training=training)
    assert _rel(y.numpy(), yt.detach().numpy()) <= 1e-10
    assert _rel(rms, rmt.numpy()) <= 1e-12 and _rel(rvs, rvt.numpy()) <= 1e-12
    g = rng.standard_normal(yt.shape)
    y.backward(g)
    yt.backward(torch.from_numpy(g))
    for a, at in zip(ts, tt, strict=True):
        assert _rel(a.grad, at.grad.numpy()) <= 1e-9

"""Depthwise ``conv2d`` (groups == in_channels, channel multiplier 1 or more) as one node
(:mod:`skiff.kernels.train.core.nn.functional.conv_depthwise`) against torch (CPU, float64 and
float32), values and gradients, and the numba kernels against their plain reference twins."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.nn.functional.conv_depthwise import (
    DepthwiseConv2dFn,
    depthwise_conv_bwd,
    depthwise_conv_fwd,
)
from skiff.kernels.train.core.tensor import Tensor

CASES = [  # (N, C, H, W), multiplier, (kh, kw), stride, padding, dilation
    ((2, 4, 9, 8), 1, (3, 3), 1, 1, 1),
    ((2, 3, 9, 7), 1, (3, 3), 2, 1, 1),
    ((1, 2, 8, 8), 3, (3, 3), 1, 1, 1),      # channel multiplier 3
    ((2, 3, 7, 10), 2, (5, 3), (2, 1), (2, 0), 1),
    ((1, 4, 11, 9), 1, (3, 3), 1, 2, 2),     # dilation 2
    ((3, 5, 6, 6), 1, (1, 1), 1, 0, 1),
]


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _run(xs, mult, k, stride, padding, dilation, dtype, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    n, c, h, w = xs
    x = rng.standard_normal(xs).astype(dtype)
    wt = rng.standard_normal((c * mult, 1) + k).astype(dtype)
    b = rng.standard_normal(c * mult).astype(dtype) if bias else None
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(wt, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True) if bias else None
    ty = torch.nn.functional.conv2d(tx, tw, tb, stride=stride, padding=padding,
                                    dilation=dilation, groups=c)
    g = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(g))
    dt = np.dtype(dtype).name
    sx = Tensor(x, dtype=dt, requires_grad=True)
    sw = Tensor(wt, dtype=dt, requires_grad=True)
    sb = Tensor(b, dtype=dt, requires_grad=True) if bias else None
    sy = F.conv2d(sx, sw, sb, stride=stride, padding=padding, dilation=dilation, groups=c)
    sy.backward(Tensor(g, dtype=dt))
    pairs = [(sy.numpy(), ty.detach().numpy()), (sx.grad.numpy(), tx.grad.numpy()),
             (sw.grad.numpy(), tw.grad.numpy())]
    if bias:
        pairs.append((sb.grad.numpy(), tb.grad.numpy()))
    return sy, pairs


@pytest.mark.parametrize("xs,mult,k,stride,padding,dilation", CASES)
def test_depthwise_matches_torch_float64(xs, mult, k, stride, padding, dilation):
    sy, pairs = _run(xs, mult, k, stride, padding, dilation, np.float64)
    for a, b in pairs:
        assert _rel(a, b) < 1e-12
    assert sy.dtype == np.float64


def test_depthwise_float32_and_one_node():
    sy, pairs = _run((4, 16, 14, 14), 1, (3, 3), 1, 1, 1, np.float32)
    for a, b in pairs:
        assert _rel(a, b) < 2e-6
    assert sy.numpy().dtype == np.float32
    assert isinstance(sy.grad_fn, DepthwiseConv2dFn)  # one node, not 16 convs + cat


def test_depthwise_without_bias_and_input_grad():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 8, 8))
    wt = rng.standard_normal((6, 1, 3, 3))
    sw = Tensor(wt, dtype="float64", requires_grad=True)
    sy = F.conv2d(Tensor(x, dtype="float64"), sw, None, padding=1, groups=6)
    sy.sum().backward()
    tw = torch.tensor(wt, requires_grad=True)
    torch.nn.functional.conv2d(torch.tensor(x), tw, None, padding=1, groups=6).sum().backward()
    assert _rel(sw.grad.numpy(), tw.grad.numpy()) < 1e-12


def test_depthwise_module_padding_same_and_chain():
    """nn.Conv2d(groups=C, padding='same') in a chain after a conv (channels-first view in)."""
    import skiff

    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1),
                             torch.nn.Conv2d(8, 8, 3, padding="same", groups=8),
                             torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)).double()
    sm = skiff.nn.Sequential(skiff.nn.Conv2d(3, 8, 3, padding=1),
                             skiff.nn.Conv2d(8, 8, 3, padding="same", groups=8),
                             skiff.nn.ReLU(), skiff.nn.Conv2d(8, 4, 1))
    sm.load_state_dict({k: v.detach().numpy().copy() for k, v in tm.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((2, 3, 10, 9))
    tx = torch.tensor(x, requires_grad=True)
    ty = tm(tx)
    ty.square().sum().backward()
    sm = sm.double() if hasattr(sm, "double") else sm
    sx = Tensor(x, dtype="float64", requires_grad=True)
    sy = sm(sx)
    (sy * sy).sum().backward()
    assert _rel(sy.numpy(), ty.detach().numpy()) < 1e-10
    assert _rel(sx.grad.numpy(), tx.grad.numpy()) < 1e-10
    for sp, tp in zip(sm.parameters(), tm.parameters()):
        assert _rel(sp.grad.numpy(), tp.grad.numpy()) < 1e-10


@pytest.mark.skipif(not numba_available(), reason="numba missing")
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_twin_matches_reference(stride, dtype):
    rng = np.random.default_rng(2)
    xt = rng.standard_normal((5, 3, 12, 11)).astype(dtype)
    w = rng.standard_normal((5, 3, 3)).astype(dtype)
    ho, wo = (12 - 3) // stride + 1, (11 - 3) // stride + 1
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert check_op(depthwise_conv_fwd, xt, w, stride, stride, ho, wo, require_fast=True,
                    **tol)
    g = rng.standard_normal((5, 3, ho, wo)).astype(dtype)
    assert check_op(depthwise_conv_bwd, g, xt, w, stride, stride, True, True,
                    require_fast=True, **tol)


@pytest.mark.parametrize("mult,stride", [(1, 1), (2, 2)])
def test_depthwise_double_backward_matches_torch(mult, stride):
    """grad(create_graph=True) through the depthwise node, then backward (a gradient
    penalty), against torch: the weight's and the input's second-order gradients."""
    import skiff

    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 7, 6))
    wt = rng.standard_normal((3 * mult, 1, 3, 3))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(wt, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, padding=1, stride=stride, groups=3)
    (tgx,) = torch.autograd.grad((ty ** 2).sum(), tx, create_graph=True)
    (tgx ** 2).sum().backward()
    sx = Tensor(x, dtype="float64", requires_grad=True)
    sw = Tensor(wt, dtype="float64", requires_grad=True)
    sy = F.conv2d(sx, sw, padding=1, stride=stride, groups=3)
    assert isinstance(sy.grad_fn, DepthwiseConv2dFn)
    (sgx,) = skiff.autograd.grad((sy * sy).sum(), sx, create_graph=True)
    (sgx * sgx).sum().backward()
    assert _rel(sgx.numpy(), tgx.detach().numpy()) < 1e-12
    assert _rel(sw.grad.numpy(), tw.grad.numpy()) < 1e-12
    assert _rel(sx.grad.numpy(), tx.grad.numpy()) < 1e-12

"""Winograd F(2x2, 3x3) for 3x3 stride-1 conv2d
(:mod:`skiff.kernels.train.core.nn.functional.conv_winograd`) against torch (CPU; float64 to
1e-12, float32 to float32 tolerance), values and every gradient; against skiff's own im2col
path; and each numba transform against its plain numpy reference twin (``check_op``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.nn.functional import conv as conv_mod
from skiff.kernels.train.core.nn.functional import conv_winograd as W
from skiff.kernels.train.core.tensor import Tensor

CASES = [  # (N, C, H, W), Cout, padding
    ((2, 16, 9, 7), 16, 1),    # odd output: a half tile on the bottom and right
    ((1, 17, 8, 8), 20, 0),    # no padding, channels not a multiple of anything
    ((2, 16, 5, 6), 24, 2),    # padding 2 (output larger than the input)
    ((3, 32, 4, 11), 16, (1, 0)),  # uneven padding, rectangular
    ((1, 16, 3, 3), 16, 0),    # a single output pixel
]


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def _both(xs, co, padding, dtype, seed=0, bias=True, need_x=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(dtype)
    w = (rng.standard_normal((co, xs[1], 3, 3)) / np.sqrt(9 * xs[1])).astype(dtype)
    b = rng.standard_normal(co).astype(dtype) if bias else None
    dt = np.dtype(dtype).name
    arrays = [x, w] + ([b] if bias else [])
    flags = [need_x, True, True]
    ts = [Tensor(a, dtype=dt, requires_grad=f) for a, f in zip(arrays, flags)]
    tt = [torch.tensor(a, requires_grad=f) for a, f in zip(arrays, flags)]
    y = F.conv2d(ts[0], ts[1], ts[2] if bias else None, padding=padding)
    yt = torch.nn.functional.conv2d(tt[0], tt[1], tt[2] if bias else None, padding=padding)
    g = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    y.backward(Tensor(g, dtype=dt))
    yt.backward(torch.from_numpy(g))
    return y, ts, tt, yt


@pytest.mark.parametrize("xs,co,padding", CASES)
def test_winograd_matches_torch_float64(xs, co, padding):
    y, ts, tt, yt = _both(xs, co, padding, np.float64)
    assert isinstance(y.grad_fn, conv_mod.Conv3x3WinogradFn)
    assert _rel(y.numpy(), yt.detach().numpy()) < 1e-12
    for a, at in zip(ts, tt):
        assert _rel(a.grad.numpy(), at.grad.numpy()) < 1e-12


@pytest.mark.parametrize("xs,co,padding", CASES[:3])
def test_winograd_float32_tolerance(xs, co, padding):
    y, ts, tt, yt = _both(xs, co, padding, np.float32, seed=1)
    assert y.numpy().dtype == np.float32
    assert _rel(y.numpy(), yt.detach().numpy()) < 3e-6
    for a, at in zip(ts, tt):
        assert a.grad.numpy().dtype == np.float32
        assert _rel(a.grad.numpy(), at.grad.numpy()) < 3e-6


ONE_IMAGE = 16 * 16 * 4 * 4 * 8  # the tiles of one (16, 7, 8) float64 image, padding 1


@pytest.mark.parametrize("chunk_bytes", [ONE_IMAGE, 2 * ONE_IMAGE])
def test_winograd_in_image_chunks_matches_torch(monkeypatch, chunk_bytes):
    """one image per chunk, then two: the chunked forward, weight-gradient sum and input
    gradient give torch's values (float64)"""
    monkeypatch.setattr(W, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(W, "CHUNK_TILES", 1)
    assert len(W.image_chunks(5, 16, 4, 4, 8)) == (5 if chunk_bytes == ONE_IMAGE else 3)
    y, ts, tt, yt = _both((5, 16, 7, 8), 16, 1, np.float64, seed=2)
    assert _rel(y.numpy(), yt.detach().numpy()) < 1e-12
    for a, at in zip(ts, tt):
        assert _rel(a.grad.numpy(), at.grad.numpy()) < 1e-12


def test_winograd_without_bias_or_input_grad_and_im2col_twin():
    y, ts, tt, yt = _both((2, 16, 7, 7), 16, 1, np.float64, bias=False, need_x=False)
    assert ts[0].grad is None
    assert _rel(ts[1].grad.numpy(), tt[1].grad.numpy()) < 1e-12
    # the same layer through im2col (the switch the benchmark uses) gives the same values
    before = conv_mod.WINOGRAD
    conv_mod.WINOGRAD = False
    try:
        y2, *_ = _both((2, 16, 7, 7), 16, 1, np.float64, bias=False, need_x=False)
    finally:
        conv_mod.WINOGRAD = before
    assert isinstance(y2.grad_fn, conv_mod.Conv2dFn)
    assert _rel(y.numpy(), y2.numpy()) < 1e-13


def test_winograd_in_a_network_matches_torch():
    """conv -> ReLU -> conv (the second conv's input is a channels-first view) -> grouped conv
    (two 16-channel groups, each Winograd) -> stride-2 conv (im2col), float64."""
    import skiff

    torch.manual_seed(0)

    def build(nn):
        return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(32, 32, 3, padding=1, groups=2),
                             nn.Conv2d(32, 16, 3, stride=2, padding=1))

    tm = build(torch.nn).double()
    sm = build(skiff.nn).double()
    sm.load_state_dict({k: v.detach().numpy().copy() for k, v in tm.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((2, 3, 11, 10))
    tx = torch.tensor(x, requires_grad=True)
    ty = tm(tx)
    (ty * ty).sum().backward()
    sx = Tensor(x, dtype="float64", requires_grad=True)
    sy = sm(sx)
    (sy * sy).sum().backward()
    assert _rel(sy.numpy(), ty.detach().numpy()) < 1e-11
    assert _rel(sx.grad.numpy(), tx.grad.numpy()) < 1e-11
    for sp, tp in zip(sm.parameters(), tm.parameters()):
        assert _rel(sp.grad.numpy(), tp.grad.numpy()) < 1e-11


def test_outside_the_domain_stays_im2col():
    rng = np.random.default_rng(0)
    for xs, ws, kw in [((1, 3, 8, 8), (16, 3, 3, 3), {}),          # 3 input channels
                       ((1, 16, 8, 8), (16, 16, 3, 3), {"stride": 2}),
                       ((1, 16, 8, 8), (16, 16, 5, 5), {}),
                       ((1, 16, 8, 8), (16, 16, 3, 3), {"padding": 3})]:
        y = F.conv2d(Tensor(rng.standard_normal(xs)), Tensor(rng.standard_normal(ws)), **kw)
        assert isinstance(y.grad_fn, conv_mod.Conv2dFn) or y.grad_fn is None


@pytest.mark.skipif(not numba_available(), reason="numba missing")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("h,w,p", [(9, 7, 1), (6, 6, 0), (5, 4, 2)])
def test_numba_transforms_match_reference_twins(dtype, h, w, p):
    rng = np.random.default_rng(5)
    c, n = 5, 2
    ho, wo = h + 2 * p - 2, w + 2 * p - 2
    th, tw = -(-ho // 2), -(-wo // 2)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    x = rng.standard_normal((n, c, h, w)).astype(dtype).transpose(1, 0, 2, 3)  # strided
    assert check_op(W.winograd_in, x, p, p, th, tw, require_fast=True, **tol)
    m = rng.standard_normal((16, 3, n * th * tw)).astype(dtype)
    bias = rng.standard_normal(3).astype(dtype)
    assert check_op(W.winograd_out, m, ho, wo, th, tw, bias, require_fast=True, **tol)
    g = rng.standard_normal((3, n, ho, wo)).astype(dtype)
    assert check_op(W.winograd_out_t, g, th, tw, require_fast=True, **tol)
    dv = rng.standard_normal((16, c, n * th * tw)).astype(dtype)
    assert check_op(W.winograd_in_t, dv, n, h, w, p, p, th, tw, require_fast=True, **tol)


def test_transforms_are_transposes():
    """<winograd_out(m), g> == <m, winograd_out_t(g)> and likewise for the input side: the
    backward is the exact adjoint of the forward (reference twins, float64)."""
    rng = np.random.default_rng(6)
    c, n, h, w, p = 3, 2, 7, 6, 1
    ho, wo = h + 2 * p - 2, w + 2 * p - 2
    th, tw = -(-ho // 2), -(-wo // 2)
    m = rng.standard_normal((16, c, n * th * tw))
    g = rng.standard_normal((c, n, ho, wo))
    lhs = (W.winograd_out.reference(m, ho, wo, th, tw) * g).sum()
    assert abs(lhs - (m * W.winograd_out_t.reference(g, th, tw)).sum()) < 1e-10
    x = rng.standard_normal((c, n, h, w))
    dv = rng.standard_normal((16, c, n * th * tw))
    lhs = (W.winograd_in.reference(x, p, p, th, tw) * dv).sum()
    assert abs(lhs - (x * W.winograd_in_t.reference(dv, n, h, w, p, p, th, tw)).sum()) < 1e-10
    wt = rng.standard_normal((4, 5, 3, 3))
    du = rng.standard_normal((16, 4, 5))
    assert abs((W.winograd_weight(wt) * du).sum() - (wt * W.winograd_weight_t(du)).sum()) < 1e-10


def test_winograd_double_backward_matches_torch():
    """grad(create_graph=True) through the Winograd node (Conv2dFn's double-backward rule
    on the same saved state), then backward, against torch."""
    import skiff

    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 16, 6, 5))
    w = rng.standard_normal((16, 16, 3, 3)) / 12
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, padding=1)
    (tgx,) = torch.autograd.grad((ty ** 2).sum(), tx, create_graph=True)
    (tgx ** 2).sum().backward()
    sx = Tensor(x, dtype="float64", requires_grad=True)
    sw = Tensor(w, dtype="float64", requires_grad=True)
    sy = F.conv2d(sx, sw, padding=1)
    assert isinstance(sy.grad_fn, conv_mod.Conv3x3WinogradFn)
    (sgx,) = skiff.autograd.grad((sy * sy).sum(), sx, create_graph=True)
    (sgx * sgx).sum().backward()
    assert _rel(sgx.numpy(), tgx.detach().numpy()) < 1e-12
    assert _rel(sw.grad.numpy(), tw.grad.numpy()) < 1e-12
    assert _rel(sx.grad.numpy(), tx.grad.numpy()) < 1e-12


def test_plain_arrays_take_winograd_too():
    """conv2d called with numpy arrays (as the ONNX graph's ops do in places) works on both
    paths and matches torch."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 16, 6, 6)).astype(np.float32)
    w = (rng.standard_normal((16, 16, 3, 3)) / 12).astype(np.float32)
    y = F.conv2d(x, w, None, padding=1)
    yt = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    assert _rel(np.asarray(y.numpy() if hasattr(y, "numpy") else y), yt.numpy()) < 3e-6

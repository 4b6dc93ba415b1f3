"""Round 28: nn/conv3d.py against torch 2.13 in float64: ``Conv3d`` (stride, padding,
dilation, groups, 'same'), ``BatchNorm3d`` (training and eval, running statistics),
``MaxPool3d``/``AvgPool3d`` (padding, count_include_pad, divisor_override, dilation) and
``AdaptiveAvgPool3d`` (uneven bins, None): outputs and every gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(283)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _run(make, shape, train=True):
    x = RNG.standard_normal(shape)
    tm = make(torch).double()
    sm = make(skiff).double()
    sd = tm.state_dict()
    if sd:
        with torch.no_grad():
            for p in tm.parameters():
                p.add_(torch.tensor(RNG.standard_normal(tuple(p.shape)) * 0.2))
        sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    res = []
    for lib, m in ((skiff, sm), (torch, tm)):
        m.train(train)
        t = lib.tensor(x, requires_grad=True)
        y = m(t)
        G = np.cos(np.arange(y.numel()) * 0.37).reshape(tuple(y.shape))
        (y * lib.tensor(G)).sum().backward()
        res.append([y, t.grad] + [p.grad for _, p in sorted(m.named_parameters())]
                   + [b for _, b in sorted(m.named_buffers())])
    assert len(res[0]) == len(res[1])
    for a, b in zip(*res):
        a, b = _np(a), _np(b)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("kw", [
    {"kernel_size": 3},
    {"kernel_size": (2, 3, 1), "stride": (1, 2, 1), "padding": (1, 0, 1)},
    {"kernel_size": 3, "dilation": 2, "padding": 2, "bias": False},
    {"kernel_size": 2, "groups": 2, "stride": 2},
    {"kernel_size": 3, "padding": "same"},
])
def test_conv3d(kw):
    _run(lambda lib: lib.nn.Conv3d(4, 6, **kw), (2, 4, 5, 6, 5))


@pytest.mark.parametrize("train", [True, False])
def test_batchnorm3d(train):
    _run(lambda lib: lib.nn.BatchNorm3d(3, momentum=0.2), (4, 3, 2, 3, 4), train)


@pytest.mark.parametrize("cls,kw", [
    ("MaxPool3d", {"kernel_size": 2}),
    ("MaxPool3d", {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("MaxPool3d", {"kernel_size": 2, "stride": 1, "dilation": 2}),
    ("AvgPool3d", {"kernel_size": 2}),
    ("AvgPool3d", {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("AvgPool3d", {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False}),
    ("AvgPool3d", {"kernel_size": (1, 2, 3), "divisor_override": 5}),
    ("AdaptiveAvgPool3d", {"output_size": 1}),
    ("AdaptiveAvgPool3d", {"output_size": (2, 3, 4)}),
    ("AdaptiveAvgPool3d", {"output_size": (None, 2, 3)}),
])
def test_pooling3d(cls, kw):
    _run(lambda lib: getattr(lib.nn, cls)(**kw), (2, 3, 5, 7, 6))


def test_functional_and_unbatched_forms():
    x = RNG.standard_normal((2, 4, 4, 5))
    w = RNG.standard_normal((3, 2, 2, 2, 2))
    for fn, args in (("conv3d", (w,)), ("max_pool3d", (2,)), ("avg_pool3d", (2,)),
                     ("adaptive_avg_pool3d", (2,))):
        a = getattr(skiff.nn.functional, fn)(skiff.tensor(x), *[
            skiff.tensor(v) if isinstance(v, np.ndarray) else v for v in args])
        b = getattr(torch.nn.functional, fn)(torch.tensor(x), *[
            torch.tensor(v) if isinstance(v, np.ndarray) else v for v in args])
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12, err_msg=fn)
    a = skiff.nn.AvgPool3d(2, ceil_mode=True)(skiff.tensor(x))  # refused before round 33
    b = torch.nn.AvgPool3d(2, ceil_mode=True)(torch.tensor(x))
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="BatchNorm3d"):
        skiff.nn.BatchNorm3d(4)(skiff.tensor(x))
    with pytest.raises(ValueError, match="channels"):
        skiff.nn.functional.conv3d(skiff.tensor(x[None]), skiff.tensor(w[:, :1]))


@pytest.mark.parametrize("kw", [
    {"kernel_size": 2, "stride": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1},
    {"kernel_size": (2, 3, 1), "stride": (1, 2, 1), "padding": (0, 1, 0), "bias": False},
    {"kernel_size": 3, "dilation": 2, "groups": 2},
])
def test_conv_transpose3d(kw):
    _run(lambda lib: lib.nn.ConvTranspose3d(4, 6, **kw), (2, 4, 3, 4, 3))


def test_conv_transpose3d_functional_and_errors():
    x = RNG.standard_normal((3, 2, 3, 2))
    w = RNG.standard_normal((3, 2, 2, 2, 2))
    a = skiff.nn.functional.conv_transpose3d(skiff.tensor(x), skiff.tensor(w), stride=2)
    b = torch.nn.functional.conv_transpose3d(torch.tensor(x), torch.tensor(w), stride=2)
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="output_padding"):
        skiff.nn.ConvTranspose3d(3, 2, 2, output_padding=1)(skiff.tensor(x[None]))

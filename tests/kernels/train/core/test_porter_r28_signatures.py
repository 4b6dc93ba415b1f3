"""Round 28: torch's constructor and function arguments that stopped ported code, against
torch 2.13 in float64 (values and gradients): ``Conv1d(dilation=, groups=, padding_mode=,
padding='same')``, torch's positional ``Conv2d(c, o, k, s, p, dilation, groups, bias)``,
``AvgPool1d/2d(padding=, count_include_pad=, divisor_override=)``,
``Upsample(scale_factor=, mode='bilinear', align_corners=)`` and ``size=``,
``UpsamplingNearest2d``/``UpsamplingBilinear2d``, ``Flatten(start_dim=, end_dim=)``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(289)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _run(make, shape, positional=()):
    x = RNG.standard_normal(shape)
    tm = make(torch).double()
    sm = make(skiff).double()
    if tm.state_dict():
        sm.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    res = []
    for lib, m in ((skiff, sm), (torch, tm)):
        t = lib.tensor(x, requires_grad=True)
        y = m(t)
        G = np.cos(np.arange(y.numel()) * 0.61).reshape(tuple(y.shape))
        (y * lib.tensor(G)).sum().backward()
        res.append([y, t.grad] + [p.grad for _, p in sorted(m.named_parameters())])
    for a, b in zip(*res):
        a, b = _np(a), _np(b)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("args,kw", [
    ((4, 6, 3), {"dilation": 2, "padding": 2}),
    ((4, 6, 3), {"groups": 2, "padding": "same"}),
    ((4, 4, 5), {"groups": 4, "padding": 2, "padding_mode": "reflect", "bias": False}),
    ((4, 6, 3, 2, 1), {"padding_mode": "circular"}),
    ((4, 6, 3, 1, 2, 2), {}),  # torch's positional dilation
])
def test_conv1d_torch_arguments(args, kw):
    _run(lambda lib: lib.nn.Conv1d(*args, **kw), (2, 4, 13))


def test_conv2d_torch_positional_order():
    _run(lambda lib: lib.nn.Conv2d(4, 4, 3, 1, 2, 2, 4, False), (2, 4, 7, 6))
    _run(lambda lib: lib.nn.Conv2d(4, 6, 3, 2, 1, 1, 2), (2, 4, 7, 6))


@pytest.mark.parametrize("name,kw,shape", [
    ("AvgPool2d", {"kernel_size": 3, "stride": 1, "padding": 1}, (2, 3, 5, 6)),
    ("AvgPool2d", {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
     (2, 3, 7, 6)),
    ("AvgPool2d", {"kernel_size": 2, "divisor_override": 3}, (1, 2, 4, 6)),
    ("AvgPool1d", {"kernel_size": 3, "stride": 1, "padding": 1}, (2, 3, 9)),
    ("AvgPool1d", {"kernel_size": 4, "stride": 2, "padding": 2, "count_include_pad": False},
     (2, 3, 9)),
    ("Upsample", {"scale_factor": 2, "mode": "bilinear", "align_corners": False}, (2, 3, 4, 5)),
    ("Upsample", {"scale_factor": 2, "mode": "bilinear", "align_corners": True}, (2, 3, 4, 5)),
    ("Upsample", {"size": (7, 9), "mode": "nearest"}, (1, 2, 4, 5)),
    ("Upsample", {"scale_factor": 1.5, "mode": "linear"}, (1, 2, 6)),
    ("UpsamplingNearest2d", {"scale_factor": 2}, (1, 2, 3, 4)),
    ("UpsamplingBilinear2d", {"size": (5, 7)}, (1, 2, 3, 4)),
    ("Flatten", {"start_dim": 2, "end_dim": 3}, (2, 3, 4, 5)),
])
def test_layer_arguments(name, kw, shape):
    _run(lambda lib: getattr(lib.nn, name)(**kw), shape)


def test_functional_pool_arguments():
    x = RNG.standard_normal((2, 3, 6, 5))
    a = skiff.nn.functional.avg_pool2d(skiff.tensor(x), 3, 1, 1, count_include_pad=False)
    b = torch.nn.functional.avg_pool2d(torch.tensor(x), 3, 1, 1, count_include_pad=False)
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12)
    # ceil_mode (refused before round 33): torch's last partial window and divisor
    a = skiff.nn.AvgPool2d(2, ceil_mode=True)(skiff.tensor(x))
    b = torch.nn.AvgPool2d(2, ceil_mode=True)(torch.tensor(x))
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12)


@pytest.mark.parametrize("name,args,kw,shape", [
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "groups": 2}, (2, 4, 3, 4)),
    ("ConvTranspose2d", (4, 6, 3), {"dilation": 2, "padding": 1, "output_padding": 1,
                                    "stride": 2}, (2, 4, 3, 3)),
    ("ConvTranspose2d", (4, 4, 2, 2, 0, 0, 4, False), {}, (1, 4, 3, 3)),  # torch's positional
    ("ConvTranspose1d", (4, 6, 3), {"groups": 2, "dilation": 2}, (2, 4, 5)),
])
def test_conv_transpose_groups_and_dilation(name, args, kw, shape):
    _run(lambda lib: getattr(lib.nn, name)(*args, **kw), shape)

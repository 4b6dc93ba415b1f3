"""Round 27: ``nn.ConvTranspose1d``, ``F.conv_transpose1d`` and ``F.conv_transpose2d``
(nn/conv_transpose_more.py) against torch 2.13 in float64: outputs (torch's output length)
and the gradients of the input, weight and bias."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(3)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


@pytest.mark.parametrize("k,stride,padding,output_padding", [
    (3, 1, 0, 0), (4, 2, 1, 0), (3, 2, 1, 1), (5, 3, 2, 2)])
def test_conv_transpose1d_module(k, stride, padding, output_padding):
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose1d(3, 2, k, stride, padding, output_padding).double()
    sm = skiff.nn.ConvTranspose1d(3, 2, k, stride, padding, output_padding,
                                  dtype=skiff.float64)
    assert sorted(sm.state_dict()) == sorted(tm.state_dict())
    sm.load_state_dict({n: skiff.tensor(v.numpy()) for n, v in tm.state_dict().items()})
    x = RNG.standard_normal((2, 3, 7))
    res = []
    for lib, m in ((skiff, sm), (torch, tm)):
        xt = lib.tensor(x, requires_grad=True)
        out = m(xt)
        (out * lib.tensor(np.sin(np.arange(out.numel())).reshape(tuple(out.shape)))).sum() \
            .backward()
        res.append([_np(out), _np(xt.grad), _np(m.weight.grad), _np(m.bias.grad)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_functional_conv_transpose2d_and_refusals():
    x = RNG.standard_normal((2, 3, 5, 4))
    w = RNG.standard_normal((3, 2, 3, 2))
    b = RNG.standard_normal(2)
    res = []
    for lib in (skiff, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = lib.nn.functional.conv_transpose2d(*ts, stride=(2, 1), padding=(1, 0),
                                                 output_padding=(1, 0))
        (out ** 2).sum().backward()
        res.append([_np(out)] + [_np(t.grad) for t in ts])
    for a, c in zip(*res):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    # groups and dilation, refused in round 27, are round 28's (test_porter_r28_signatures.py)

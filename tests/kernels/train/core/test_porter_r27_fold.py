"""Round 27: ``F.unfold``/``F.fold`` and ``nn.Unfold``/``nn.Fold`` (nn/fold.py) against torch
2.13 in float64 over kernel sizes, dilations, paddings and strides: values and input
gradients; and unfold + matmul + fold as a convolution equals ``F.conv2d``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(6)
SETTINGS = [dict(kernel_size=2), dict(kernel_size=(3, 2), stride=2),
            dict(kernel_size=3, padding=1, dilation=2), dict(kernel_size=(2, 3), padding=(1, 0),
                                                             stride=(1, 2))]


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


@pytest.mark.parametrize("kw", SETTINGS, ids=range(len(SETTINGS)))
def test_unfold_fold_against_torch(kw):
    x = RNG.standard_normal((2, 3, 7, 6))
    res = []
    for lib in (skiff, torch):
        xt = lib.tensor(x, requires_grad=True)
        cols = lib.nn.Unfold(**kw)(xt)
        back = lib.nn.Fold((7, 6), **kw)(cols * lib.tensor(
            np.cos(np.arange(cols.numel())).reshape(tuple(cols.shape))))
        (back * back).sum().backward()
        res.append((_np(cols), _np(back), _np(xt.grad)))
    for a, b in zip(*res):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_unfold_matmul_is_conv():
    x = RNG.standard_normal((2, 3, 6, 6))
    w = RNG.standard_normal((4, 3, 3, 3))
    cols = skiff.nn.functional.unfold(skiff.tensor(x), 3, padding=1)
    y = (skiff.tensor(w.reshape(4, -1)) @ cols).reshape(2, 4, 6, 6)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1)
    np.testing.assert_allclose(_np(y), _np(want), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="does not fit"):
        skiff.nn.functional.unfold(skiff.tensor(x), 9)

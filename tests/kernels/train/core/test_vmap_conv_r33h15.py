"""Round 33 (h15): ``vmap`` over skiff's fast convolution nodes (Winograd 3x3 layers of 16+
channels, depthwise layers) by rules, not the per-sample loop: per-sample gradients and
ensembles of a small CNN equal torch 2.13's ``torch.func``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import skiff
import skiff.func as sf
from skiff.kernels.train.core import vmap_r30

RNG = np.random.default_rng(3315)


@pytest.fixture(autouse=True)
def _clear():
    vmap_r30.LOOPED.clear()
    yield


def _cnn(lib, mult=1):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(2, 16, 3, padding=1)
            self.conv2 = nn.Conv2d(16, 16, 3, padding=1)  # Winograd's domain in float32
            self.dw = nn.Conv2d(16, 16 * mult, 3, padding=1, groups=16)  # depthwise
            self.fc = nn.Linear(16 * mult * 2 * 2, 3)

        def forward(self, x):
            F = lib.nn.functional
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = F.avg_pool2d(F.relu(self.dw(x)), 2)
            return self.fc(x.flatten(1))
    return Net()


def _copy(s, t):
    s.load_state_dict({k: skiff.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return s


@pytest.mark.parametrize("mult", [1, 2])
def test_per_sample_gradients_of_a_winograd_depthwise_cnn_equal_torch(mult):
    from skiff.kernels.train.core.nn.functional.conv_winograd import use_winograd

    assert use_winograd(np.zeros((1, 16, 8, 8), np.float32), np.zeros((16, 16, 3, 3),
                                                                       np.float32), (1, 1),
                        (1, 1))
    torch.manual_seed(0)
    t = _cnn(torch, mult)
    s = _copy(_cnn(skiff, mult), t)
    X = RNG.standard_normal((4, 2, 8, 8)).astype(np.float32)
    Y = RNG.integers(0, 3, 4)
    res = []
    for lib, fn, m in ((skiff, sf, s), (torch, tf, t)):
        F = lib.nn.functional

        def loss(p, x, y, m=m, fn=fn, F=F):
            return F.cross_entropy(fn.functional_call(m, p, (x.unsqueeze(0),)), y.unsqueeze(0))

        p = {k: v.detach() for k, v in m.named_parameters()}
        res.append(fn.vmap(fn.grad(loss), in_dims=(None, 0, 0))(p, lib.tensor(X),
                                                                  lib.tensor(Y)))
    gs, gt = res
    assert set(gs) == set(gt)
    for k in gt:
        a, b = np.asarray(gs[k].detach()), gt[k].detach().numpy()
        assert a.shape == b.shape, k
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(b).max()))
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


@pytest.mark.parametrize("groups,wshape", [(1, (16, 16, 3, 3)), (16, (16, 1, 3, 3)),
                                           (16, (32, 1, 3, 3))])
def test_vmap_over_per_sample_weights_equals_torch(groups, wshape):
    """An ensemble: a weight per sample through the Winograd-sized and depthwise layers."""
    X = RNG.standard_normal((2, 16, 6, 6)).astype(np.float32)
    W = (RNG.standard_normal((3,) + wshape) * 0.2).astype(np.float32)
    B = RNG.standard_normal((3, wshape[0])).astype(np.float32)
    out = []
    for lib, fn in ((skiff, sf), (torch, tf)):
        F = lib.nn.functional

        def f(w, b, F=F, x=lib.tensor(X)):
            return F.conv2d(x, w, b, padding=1, groups=groups)

        out.append(fn.vmap(f)(lib.tensor(W), lib.tensor(B)))
    a, b = np.asarray(out[0].detach()), out[1].numpy()
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)

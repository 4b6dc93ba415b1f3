"""Round 28: names of older and multi-GPU torch scripts, against torch 2.13 in float64:
``nn.DataParallel`` (its ``module.`` state dict), ``SyncBatchNorm`` and
``convert_sync_batchnorm`` (on one process: torch's BatchNorm numbers), ``nn.Buffer``,
``ZeroPad1d``/``ZeroPad3d``/``ConstantPad3d``, the functional in-place activations,
``F.upsample*``, ``F.max_pool*d_with_indices``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(290)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(2, 3, 3, padding=1)
            self.bn = lib.nn.BatchNorm2d(3)
            self.seq = lib.nn.Sequential(lib.nn.Conv1d(3, 3, 1), lib.nn.BatchNorm1d(3))
            self.scale = lib.nn.Buffer(lib.tensor(np.array([2.0, 0.5, 1.0])))

        def forward(self, x):
            h = self.bn(self.conv(x)) * self.scale.reshape(1, 3, 1, 1)
            return self.seq(h.flatten(2))

    return Net


def test_data_parallel_sync_batchnorm_and_buffer_against_torch():
    x = RNG.standard_normal((4, 2, 3, 3))
    res, keys, state = [], [], {}
    for lib in (torch, skiff):
        lib.manual_seed(0)
        net = _net(lib)().double()
        net = lib.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        assert isinstance(net.bn, lib.nn.SyncBatchNorm) and isinstance(net.seq[1],
                                                                       lib.nn.SyncBatchNorm)
        dp = lib.nn.DataParallel(net)
        if lib is skiff:
            dp.load_state_dict({k: skiff.tensor(v.numpy()) for k, v in state.items()})
        else:  # torch's state dict shares the buffers the forward moves: copy it first
            state = {k: v.clone() for k, v in dp.state_dict().items()}
        keys.append(sorted(dp.state_dict()))
        t = lib.tensor(x, requires_grad=True)
        y = dp(t)
        (y * y).sum().backward()
        res.append([y, t.grad, dp.module.conv.weight.grad, dp.module.bn.running_var,
                    dp.module.seq[1].running_mean])
    assert keys[0] == keys[1] and "module.scale" in keys[0]
    for a, b in zip(res[1], res[0]):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name,args,shape", [("ZeroPad1d", (2,), (2, 3, 5)),
                                             ("ZeroPad1d", ((1, 3),), (2, 3, 5)),
                                             ("ZeroPad3d", (1,), (1, 2, 2, 3, 2)),
                                             ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 0.5),
                                              (1, 2, 2, 3, 2))])
def test_pads(name, args, shape):
    x = RNG.standard_normal(shape)
    a = getattr(skiff.nn, name)(*args)(skiff.tensor(x))
    b = getattr(torch.nn, name)(*args)(torch.tensor(x))
    np.testing.assert_array_equal(_np(a), _np(b))


@pytest.mark.parametrize("name,kw", [("relu_", {}), ("elu_", {"alpha": 0.5}),
                                     ("leaky_relu_", {"negative_slope": 0.2}),
                                     ("hardtanh_", {}), ("selu_", {}), ("celu_", {}),
                                     ("threshold_", {"threshold": 0.1, "value": -1.0})])
def test_functional_in_place_activations(name, kw):
    x = RNG.standard_normal((3, 4))
    outs = []
    for lib in (skiff, torch):
        w = lib.tensor(x, requires_grad=True)
        h = w * 1.0
        r = getattr(lib.nn.functional, name)(h, **kw)
        assert r is h
        (h * h).sum().backward()
        outs.append([h, w.grad])
    for a, b in zip(*outs):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


def test_upsample_aliases_and_with_indices():
    x = RNG.standard_normal((1, 2, 3, 4))
    for name, kw in (("upsample", {"scale_factor": 2, "mode": "bilinear",
                                   "align_corners": False}),
                     ("upsample_nearest", {"scale_factor": 2}),
                     ("upsample_bilinear", {"size": (5, 6)})):
        a = getattr(skiff.nn.functional, name)(skiff.tensor(x), **kw)
        b = getattr(torch.nn.functional, name)(torch.tensor(x), **kw)
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, err_msg=name)
    a, ia = skiff.nn.functional.max_pool2d_with_indices(skiff.tensor(x), 2)
    b, ib = torch.nn.functional.max_pool2d_with_indices(torch.tensor(x), 2)
    np.testing.assert_array_equal(_np(ia), _np(ib))
    np.testing.assert_array_equal(_np(a), _np(b))

"""Round 28's training-core additions on :mod:`.strictcupy` device arrays: spectral
normalisation (both forms; the power iteration writes its buffers in place on the device),
``affine_grid``/``grid_sample``, the volume layers (``Conv3d``, ``BatchNorm3d``, 3-D pooling,
``AdaptiveAvgPool3d``), ``InstanceNorm`` running statistics, ``MultiMarginLoss``, ``RReLU``,
``masked_scatter``. Each program runs in torch (the oracle), in skiff on the CPU (equal to
torch) and on the strict fake ``cuda:0`` (equal to the CPU run, no implicit move to numpy);
none of them reads anything back to the host."""

from __future__ import annotations

import numpy as np

import skiff

from . import strictcupy
from .test_strict_device_ops import arr, idx
from .test_strict_device_training import SKIFF, TORCH, run_three, twin

READS: dict = {}


def counted(name, program):
    def wrapped(lib, dev):
        strictcupy.SYNCS.clear()
        out = program(lib, dev)
        if dev != "cpu":
            READS[name] = list(strictcupy.SYNCS)
        return out

    return wrapped


def _module(lib, dev, make):
    skiff.manual_seed(0)
    ours = make(skiff).double()
    if lib is SKIFF:
        return ours.to(dev)
    return twin(ours, lambda: make(TORCH.mod))


def test_spectral_norm_and_grid_sample_read_nothing_back(monkeypatch):
    def program(lib, dev):
        old = _module(lib, dev, lambda m: m.nn.utils.spectral_norm(m.nn.Linear(5, 4)))
        new = _module(lib, dev, lambda m: m.nn.utils.parametrizations.spectral_norm(
            m.nn.Conv2d(2, 3, 3)))
        rng = np.random.default_rng(21)
        x = arr(lib, dev, rng.standard_normal((3, 5)), True)
        img = arr(lib, dev, rng.standard_normal((2, 2, 6, 7)), True)
        theta = arr(lib, dev, [[[0.9, 0.2, 0.1], [-0.1, 1.1, -0.2]],
                               [[1.2, -0.3, 0.0], [0.25, 0.8, 0.3]]], True)
        outs = []
        for _ in range(2):  # two training forwards: two power-iteration steps
            outs += [old(x), new(img)]
        fn = lib.mod.nn.functional
        grid = fn.affine_grid(theta, (2, 2, 4, 5), align_corners=False)
        outs += [fn.grid_sample(img, grid, padding_mode=p, mode=m, align_corners=a)
                 for p, m, a in (("zeros", "bilinear", False), ("border", "bilinear", False),
                                 ("reflection", "bilinear", False),
                                 ("zeros", "nearest", False))]
        sum((o * o).sum() for o in outs).backward()
        return outs + [x.grad, img.grad, theta.grad, old.weight_orig.grad, old.weight_u,
                       new.parametrizations.weight.original.grad,
                       new.parametrizations.weight[0]._v]

    run_three(counted("sn_grid", program), monkeypatch)
    assert READS["sn_grid"] == []


def test_volume_layers_and_round28_losses_read_nothing_back(monkeypatch):
    def program(lib, dev):
        conv = _module(lib, dev, lambda m: m.nn.Conv3d(2, 4, 3, padding=1, groups=2))
        bn = _module(lib, dev, lambda m: m.nn.BatchNorm3d(4))
        inorm = _module(lib, dev, lambda m: m.nn.InstanceNorm2d(3, affine=True,
                                                               track_running_stats=True))
        rng = np.random.default_rng(22)
        v = arr(lib, dev, rng.standard_normal((2, 2, 4, 5, 4)), True)
        h = bn(conv(v))
        pooled = [lib.mod.nn.MaxPool3d(2, stride=1, padding=1)(h),
                  lib.mod.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False)(h),
                  lib.mod.nn.AdaptiveAvgPool3d((2, 3, 1))(h)]
        img = arr(lib, dev, rng.standard_normal((2, 3, 4, 4)), True)
        scores = arr(lib, dev, rng.standard_normal((5, 4)), True)
        y = idx(lib, dev, [0, 3, 1, 1, 2])
        w = arr(lib, dev, [1.0, 0.5, 2.0, 1.5])
        mask = lib.tensor(rng.random((3, 4)) < 0.5).to(dev)
        src = arr(lib, dev, rng.standard_normal(12), True)
        outs = pooled + [
            inorm(img),
            lib.mod.nn.MultiMarginLoss(p=2, weight=w)(scores, y).reshape(1),
            lib.mod.nn.RReLU().eval()(scores),
            scores[:3].masked_scatter(mask, src)]
        sum((o * o).sum() for o in outs).backward()
        return outs + [v.grad, img.grad, scores.grad, src.grad, conv.weight.grad,
                       bn.running_var, inorm.running_mean, inorm.running_var]

    run_three(counted("volumes", program), monkeypatch)
    assert READS["volumes"] == []


def test_second_batch_reads_nothing_back(monkeypatch):
    """LocalResponseNorm, ChannelShuffle, LPPool2d, AdaptiveMaxPool1d, MultiLabelMarginLoss
    (its target counts are a device scatter-add) and an ASGD step."""
    def program(lib, dev):
        rng = np.random.default_rng(23)
        x = arr(lib, dev, rng.standard_normal((2, 6, 4, 4)), True)
        s = arr(lib, dev, rng.standard_normal((3, 5)), True)
        y = idx(lib, dev, [[3, 0, -1, 1, 2], [2, 2, -1, -1, -1], [-1, 1, 2, 0, 0]])
        lin = _module(lib, dev, lambda m: m.nn.Linear(5, 2))
        opt = lib.optim.ASGD(lin.parameters(), lr=0.05, t0=1)
        outs = [lib.mod.nn.LocalResponseNorm(3)(x), lib.mod.nn.ChannelShuffle(2)(x),
                lib.mod.nn.LPPool2d(2, 2)(x * x + 0.1),
                lib.mod.nn.AdaptiveMaxPool1d(3)(s.unsqueeze(0)),
                lib.mod.nn.MultiLabelMarginLoss()(s, y).reshape(1)]
        for _ in range(3):
            opt.zero_grad()
            (lin(s) ** 2).sum().backward()
            opt.step()
        sum((o * o).sum() for o in outs).backward()
        return outs + [x.grad, s.grad, lin.weight]

    run_three(counted("batch2", program), monkeypatch)
    assert READS["batch2"] == []


def test_pool_indices_unpool_and_transposed_volumes_read_nothing_back(monkeypatch):
    """max pooling's indices (a device gather of the window offsets), MaxUnpool2d (a device
    scatter), ceil_mode, ConvTranspose3d."""
    def program(lib, dev):
        up = _module(lib, dev, lambda m: m.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1,
                                                              output_padding=1))
        rng = np.random.default_rng(24)
        x = arr(lib, dev, rng.standard_normal((2, 3, 6, 7)), True)
        v = arr(lib, dev, rng.standard_normal((1, 2, 2, 3, 2)), True)
        y, i = lib.mod.nn.MaxPool2d(2, return_indices=True, ceil_mode=True)(x)
        z = lib.mod.nn.MaxUnpool2d(2)(y, i, output_size=(6, 7))
        outs = [y, z, lib.mod.nn.MaxPool2d(3, stride=1, dilation=2)(x), up(v)]
        sum((o * o).sum() for o in outs).backward()
        return outs + [i, x.grad, v.grad, up.weight.grad]

    run_three(counted("unpool", program), monkeypatch)
    assert READS["unpool"] == []

"""Round 28 (second batch): nn/layers_r28b.py (``LocalResponseNorm``, ``ChannelShuffle``,
``AdaptiveMaxPool1d``, ``LPPool1d``/``2d``, ``TripletMarginWithDistanceLoss``,
``MultiLabelMarginLoss``) and ``optim.ASGD`` against torch 2.13 in float64: values, input
gradients, optimizer trajectories."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(286)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _both(fn, *arrays):
    res = []
    for lib in (skiff, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *ts)
        G = np.cos(np.arange(out.numel()) * 0.9).reshape(tuple(out.shape))
        (out * lib.tensor(G)).sum().backward()
        res.append([out] + [t.grad for t in ts])
    for a, b in zip(*res):
        a, b = _np(a), _np(b)
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name,kw,shape", [
    ("LocalResponseNorm", {"size": 3}, (2, 5, 4, 3)),
    ("LocalResponseNorm", {"size": 4, "alpha": 0.1, "beta": 0.6, "k": 2.0}, (2, 6, 7)),
    ("LocalResponseNorm", {"size": 2}, (1, 3, 2, 2, 3)),
    ("ChannelShuffle", {"groups": 3}, (2, 6, 3, 2)),
    ("AdaptiveMaxPool1d", {"output_size": 4}, (2, 3, 11)),
    ("LPPool1d", {"norm_type": 2, "kernel_size": 3, "stride": 2}, (2, 3, 9)),
    ("LPPool2d", {"norm_type": 3, "kernel_size": 2}, (2, 3, 6, 4)),
    ("LPPool2d", {"norm_type": 1.5, "kernel_size": (2, 3), "stride": 1}, (1, 2, 5, 6)),
])
def test_layers(name, kw, shape):
    x = RNG.standard_normal(shape)
    if name.startswith("LP"):
        x = np.abs(x) + 0.1  # torch's LP pool is the power of a sum: keep the bases positive
    _both(lambda lib, x: getattr(lib.nn, name)(**kw)(x), x)


@pytest.mark.parametrize("swap,dist", [(False, None), (True, None), (True, "cos")])
def test_triplet_margin_with_distance_loss(swap, dist):
    a, p, n = (RNG.standard_normal((6, 4)) for _ in range(3))

    def fn(lib, a, p, n):
        d = None if dist is None else (lambda x, y: 1 - lib.nn.functional.cosine_similarity(x, y))
        return lib.nn.TripletMarginWithDistanceLoss(distance_function=d, margin=0.7, swap=swap,
                                                    reduction="sum")(a, p, n)

    _both(fn, a, p, n)


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_multilabel_margin_loss(reduction):
    x = RNG.standard_normal((4, 5))
    y = np.array([[3, 0, -1, 1, 2], [1, 2, 4, 0, 3], [2, 2, -1, -1, -1], [-1, 1, 2, 0, 0]])

    def fn(lib, x):
        return lib.nn.MultiLabelMarginLoss(reduction=reduction)(x, lib.tensor(y))

    _both(fn, x)
    _both(lambda lib, x: lib.nn.functional.multilabel_margin_loss(x, lib.tensor(y[0])), x[0])


@pytest.mark.parametrize("kw", [{}, {"t0": 2, "lambd": 0.01, "weight_decay": 0.1},
                                {"maximize": True, "alpha": 0.5, "t0": 0}])
def test_asgd_against_torch(kw):
    w0 = [RNG.standard_normal((3, 2)), RNG.standard_normal(2)]
    xs = [RNG.standard_normal((4, 3)) for _ in range(6)]
    runs = []
    for lib in (skiff, torch):
        ps = [lib.tensor(w, requires_grad=True) for w in w0]
        opt = lib.optim.ASGD(ps, lr=0.05, **kw)
        hist = []
        for x in xs:
            opt.zero_grad()
            ((lib.tensor(x) @ ps[0] + ps[1]).tanh() ** 2).mean().backward()
            opt.step()
            hist.append([np.array(_np(p)) for p in ps] + [np.array(_np(
                opt.state[ps[0]]["ax"] if lib is torch else skiff.tensor(opt.state[ps[0]]["ax"])
            ))])
        runs.append(hist)
    for a, b in zip(*runs):
        for pa, pb in zip(a, b):
            np.testing.assert_allclose(pa, pb, rtol=1e-13, atol=1e-14)

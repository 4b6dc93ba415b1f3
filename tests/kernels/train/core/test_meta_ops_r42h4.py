"""Round 42 (h4): the meta device as torch's: operations propagate shapes only, factories
and ``set_default_device("meta")``, and torch's dtype attributes on state-dict values
(YOLOv5's EMA); each against torch 2.13 in one process."""

from __future__ import annotations

import copy
import math
import threading

import numpy as np
import pytest

import skiff
import skiff.nn as snn

torch = pytest.importorskip("torch")


def _span(a) -> int:
    """Bytes an array's strides reach (a meta array: one element)."""
    return a.itemsize + sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides) if n)


def _same(s, t):
    assert tuple(s.shape) == tuple(t.shape)
    assert str(s.dtype).replace("torch.", "") == str(t.dtype).replace("torch.", "")
    assert s.is_meta and t.is_meta and str(s.device) == str(t.device) == "meta"
    assert _span(s._data) == s._data.itemsize  # no memory behind it


def test_meta_ops_propagate_shapes_without_memory():
    # a 4000x4000 float64 layer: any real result would hold 128 MB (and a matmul 1e11 flops)
    n = 4000
    lin = {"s": snn.Linear(n, n, device="meta", dtype=skiff.float64),
           "t": torch.nn.Linear(n, n, device="meta", dtype=torch.float64)}
    mods = {"s": skiff, "t": torch}
    res = {}
    for k, m in mods.items():
        w = lin[k].weight
        x = m.randn(64, n, device="meta", dtype=m.float64, requires_grad=True)
        y = lin[k](x)
        h = m.nn.functional.gelu(y).softmax(-1)
        res[k] = [y, h, w @ w, w * 2 + 1, w.exp(), w.sum(0), w.sum(), w.mean(1, keepdim=True),
                  w.amax(-1), m.cat([w, w], 1), m.stack([w, w], -1), (w > 0), w.float(),
                  m.outer(m.arange(n, device="meta"), m.arange(7, device="meta")),
                  m.einsum("ij,jk->ik", x, w)]
        loss = (h * h).sum()
        loss.backward()
        res[k] += [loss, x.grad, lin[k].weight.grad, lin[k].bias.grad]
    for s, t in zip(res["s"], res["t"]):
        _same(s, t)
    # numpy's checks still run on the shapes: torch refuses, skiff refuses
    with pytest.raises((RuntimeError, ValueError)):
        skiff.randn(3, 4, device="meta") @ skiff.randn(5, 2, device="meta")
    with pytest.raises((RuntimeError, ValueError)):
        skiff.cat([skiff.randn(3, 4, device="meta"), skiff.randn(3, 5, device="meta")])


def test_meta_factories_and_default_device_as_torch():
    def made(m, **kw):
        return [m.zeros(2, 3, **kw), m.ones(4, **kw), m.full((2,), 1.5, **kw),
                m.full((3,), 2, **kw), m.arange(10, **kw), m.arange(0, 1, 0.3, **kw),
                m.arange(0, 10, 3, **kw), m.randn(3, 2, **kw), m.rand(5, **kw),
                m.tensor([1.0, 2.0], **kw), m.eye(3, **kw), m.linspace(0, 1, 7, **kw),
                m.empty(2, 2, **kw)]

    with skiff.device("meta"):   # skiff's context, against torch's explicit device: torch's
        sm = made(skiff)         # own context left linspace on the host after other tests
    tm = made(torch, device="meta")   # in one CI worker (round 42), an order dependence
    for s, t in zip(sm, tm):
        _same(s, t)
    # device="meta" and a meta tensor's new_*/*_like keep meta
    for m in (skiff, torch):
        x = m.randn(2, 3, device="meta")
        out = [m.arange(5, device="meta"), m.full((2, 2), 0.5, device="meta"),
               m.logspace(0, 1, 4, device="meta"), m.zeros_like(x), m.ones_like(x),
               m.ones_like(m.randn(2), device="meta"), x.new_zeros(4), x.new_ones(2, 2),
               x.new_empty((3,)), x.new_full((2,), 1.0)]
        (sm if m is skiff else tm).append(out)
    for s, t in zip(sm[-1], tm[-1]):
        _same(s, t)
    # a meta draw draws nothing (torch's generator does not move)
    skiff.manual_seed(3)
    a = skiff.randn(4)
    skiff.manual_seed(3)
    skiff.randn(1000, device="meta")
    for s, t in ((skiff.randint(0, 5, (3, 2), device="meta"), torch.randint(0, 5, (3, 2),
                                                                            device="meta")),
                 (skiff.randperm(7, device="meta"), torch.randperm(7, device="meta"))):
        _same(s, t)
    assert np.array_equal(skiff.randn(4).numpy(), a.numpy())
    # set_default_device("meta"), per thread as torch's; None undoes it
    got = {}
    for name, m in (("s", skiff), ("t", torch)):
        m.set_default_device("meta")
        try:
            other = []
            th = threading.Thread(target=lambda m=m, o=other: o.append(str(m.zeros(1).device)))
            th.start()
            th.join()
            got[name] = [str(m.zeros(2).device), str(m.nn.Linear(2, 3).weight.device),
                         repr(m.get_default_device()), other[0]]
        finally:
            m.set_default_device(None)
        got[name] += [str(m.zeros(1).device), str(m.get_default_device())]
    assert got["s"] == got["t"] == ["meta", "meta", "device(type='meta')", "cpu", "cpu",
                                    "cpu"]


def _ema_run(m, model):
    ema = copy.deepcopy(model).eval()
    opt = m.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = np.random.default_rng(0)
    for i in range(3):
        x = m.tensor(g.standard_normal((4, 3, 8, 8)))
        y = m.tensor(g.integers(0, 2, 4))
        loss = m.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        d = 0.9999 * (1 - math.exp(-(i + 1) / 2000))  # YOLOv5's ModelEMA.update
        msd = model.state_dict()
        with m.no_grad():
            for k, v in ema.state_dict().items():
                if v.dtype.is_floating_point:
                    v *= d
                    v += (1 - d) * msd[k].detach()
    return ema.state_dict()


def test_yolov5_ema_reads_torch_dtype_attributes():
    def build(m):
        nn = m.nn
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                             nn.Linear(4 * 6 * 6, 2)).double()

    tm, sm = build(torch), build(skiff)
    sm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    et, es = _ema_run(torch, tm), _ema_run(skiff, sm)
    for k in et:
        np.testing.assert_allclose(np.asarray(es[k]), et[k].numpy(), rtol=1e-12, atol=1e-14)
        d, td = es[k].dtype, et[k].dtype
        assert (d.is_floating_point, d.is_complex, d.is_signed) == (
            td.is_floating_point, td.is_complex, td.is_signed), k
        assert d == np.dtype(str(td).replace("torch.", "")) and str(d) == str(np.dtype(d))
    # numpy takes the dtype as its own; comparisons and dict keys as numpy's dtype
    d = es["0.weight"].dtype
    assert np.zeros(2, dtype=d).dtype == np.float64 and d == skiff.float64
    assert {np.dtype("float64"): 1}[d] == 1 and np.asarray(es["0.weight"]).dtype == d
    assert es["1.num_batches_tracked"].dtype.is_signed

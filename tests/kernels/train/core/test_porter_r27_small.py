"""Round 27's last small names, against torch 2.13 (float64): ``polygamma`` (value and
gradient), ``histc``, ``renorm``, ``stride``/``is_contiguous``, ``Dropout3d`` and
``AlphaDropout`` (structure, and the mean/variance an AlphaDropout keeps, against torch's own
on the same input), ``StackDataset``, ``get_worker_info``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import skiff
import skiff.utils.data as sud

RNG = np.random.default_rng(10)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


@pytest.mark.parametrize("n", [0, 1, 2])
def test_polygamma(n):
    x = RNG.uniform(0.5, 3.0, 6)
    res = []
    for lib in (skiff, torch):
        t = lib.tensor(x, requires_grad=True)
        y = lib.polygamma(n, t)
        y.sum().backward()
        res.append((_np(y), _np(t.grad)))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-8)  # torch's to ~1e-10
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-7)


def test_histc_renorm_strides():
    x = RNG.standard_normal(200)
    for kw in ({}, {"bins": 7, "min": -1.0, "max": 1.5}):
        np.testing.assert_array_equal(_np(skiff.tensor(x).histc(**kw)),
                                      _np(torch.tensor(x).histc(**kw)))
    m = RNG.standard_normal((4, 3, 2))
    res = []
    for lib in (skiff, torch):
        t = lib.tensor(m, requires_grad=True)
        y = t.renorm(2, 1, 1.5)
        (y * lib.tensor(np.cos(np.arange(24.0)).reshape(4, 3, 2))).sum().backward()
        res.append((_np(y), _np(t.grad)))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for lib in (skiff, torch):
        t = lib.zeros(2, 3, 4)
        assert t.stride() == (12, 4, 1) and t.stride(1) == 4 and t.is_contiguous()
        assert t.transpose(0, 2).stride() == (1, 4, 12)


def test_dropout3d_and_alpha_dropout():
    x = np.ones((4, 6, 2, 3, 3))
    y = _np(skiff.nn.Dropout3d(0.5)(skiff.tensor(x)))
    per_channel = y.reshape(4, 6, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    m = skiff.nn.Dropout3d(0.5)
    m.eval()
    np.testing.assert_array_equal(_np(m(skiff.tensor(x))), x)
    z = RNG.standard_normal(200000)
    skiff.manual_seed(0)
    torch.manual_seed(0)
    s = _np(skiff.nn.functional.alpha_dropout(skiff.tensor(z), 0.2, training=True))
    t = _np(torch.nn.functional.alpha_dropout(torch.tensor(z), 0.2, training=True))
    assert abs(s.mean() - t.mean()) < 0.01 and abs(s.std() - t.std()) < 0.01

    def dropped(v):  # the value every dropped entry takes: the most frequent one
        values, counts = np.unique(v, return_counts=True)
        return values[counts.argmax()], counts.max() / v.size

    (vs, fs), (vt, ft) = dropped(s), dropped(t)
    np.testing.assert_allclose(vs, vt, rtol=1e-12)
    assert abs(fs - ft) < 0.01


def test_stack_dataset_and_worker_info():
    a, b = RNG.standard_normal((5, 2)), RNG.integers(0, 3, 5)
    for mod, lib in ((sud, skiff), (tud, torch)):
        ds = mod.StackDataset(x=mod.TensorDataset(lib.tensor(a)), y=mod.TensorDataset(
            lib.tensor(b)))
        item = ds[3]
        np.testing.assert_array_equal(_np(item["x"][0]), a[3])
        assert int(item["y"][0]) == b[3] and len(ds) == 5
        with pytest.raises(ValueError):
            mod.StackDataset(mod.TensorDataset(lib.tensor(a)), mod.TensorDataset(lib.tensor(b[:3])))
        assert mod.get_worker_info() is None

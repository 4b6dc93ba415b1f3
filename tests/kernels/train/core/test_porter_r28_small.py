"""Round 28: ``masked_scatter``/``masked_scatter_``, ``put``/``put_`` and
``skiff.random.fork_rng`` against torch 2.13 (values and gradients in float64; for
``fork_rng``, the same pattern of repeated and fresh draws as torch's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
import skiff.random

RNG = np.random.default_rng(284)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (3, 1)])
def test_masked_scatter(mask_shape):
    x = RNG.standard_normal((3, 4))
    src = RNG.standard_normal((3, 5))
    mask = RNG.random(mask_shape) < 0.5
    res = []
    for lib in (skiff, torch):
        a = lib.tensor(x, requires_grad=True)
        s = lib.tensor(src, requires_grad=True)
        y = (a * 1.0).masked_scatter(lib.tensor(mask), s)
        G = np.cos(np.arange(12.0)).reshape(3, 4)
        (y * lib.tensor(G)).sum().backward()
        z = lib.tensor(x).clone()
        z.masked_scatter_(lib.tensor(mask), lib.tensor(src))
        res.append([y, a.grad, s.grad, z])
    for p, q in zip(*res):
        np.testing.assert_allclose(_np(p), _np(q), rtol=1e-14, atol=1e-14)


def test_masked_scatter_short_source_is_refused():
    with pytest.raises(ValueError, match="selects 3"):
        skiff.zeros(3).masked_scatter(skiff.tensor([True, True, True]), skiff.ones(2))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate):
    x = RNG.standard_normal((3, 4))
    idx = np.array([0, 5, -1, 5 if accumulate else 7])
    src = RNG.standard_normal(4)
    res = []
    for lib in (skiff, torch):
        a = lib.tensor(x, requires_grad=True)
        s = lib.tensor(src, requires_grad=True)
        y = a.put(lib.tensor(idx), s, accumulate=accumulate)
        (y * lib.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
        z = lib.tensor(x).clone()
        z.put_(lib.tensor(idx), lib.tensor(src), accumulate=accumulate)
        res.append([y, a.grad, s.grad, z])
    for p, q in zip(*res):
        np.testing.assert_allclose(_np(p), _np(q), rtol=1e-14, atol=1e-14)


def test_fork_rng_like_torch():
    pattern = []
    for lib, fork in ((torch, torch.random.fork_rng), (skiff, skiff.random.fork_rng)):
        lib.manual_seed(5)
        with fork():
            a = _np(lib.rand(4))
        b = _np(lib.rand(4))
        try:
            with fork(devices=[]):
                lib.rand(2)
                raise KeyError
        except KeyError:
            pass
        c = _np(lib.rand(4))
        with fork(enabled=False):
            lib.rand(4)
        d = _np(lib.rand(4))
        pattern.append((np.array_equal(a, b), np.array_equal(b, c), np.array_equal(c, d)))
    assert pattern[0] == pattern[1] == (True, False, False)

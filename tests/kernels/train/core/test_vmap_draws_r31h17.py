"""Round 31 (h17): ``vmap(..., randomness="different")`` draws ``bernoulli`` (function,
method, ``bernoulli_``), ``randint``/``randint_like``, ``normal_``/``uniform_`` and
``normal(mean, std)`` once for all samples, one independent draw each (they looped the whole
call). Checked as test_vmap_r31.py checks dropout: structure (each sample its own draw; the
same draw for all under randomness="same"), statistics against the distribution's own
moments (the oracle: Bernoulli(p), U{low..high-1}, N(mean, std), U(a, b)), and nothing
looped (vmap_r30.LOOPED)."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import vmap_r30

N = 4000  # samples in the statistics checks: a mean's standard error ~ 0.5 / sqrt(N * k)


@pytest.fixture(autouse=True)
def _clean():
    vmap_r30.LOOPED.clear()
    skiff.manual_seed(0)
    yield


def _vmap(f, *args, randomness="different"):
    return np.asarray(skiff.func.vmap(f, randomness=randomness)(*args).numpy())


def _distinct_rows(a):
    return len({tuple(np.round(r, 9).ravel()) for r in a})


DRAWS = {
    "bernoulli": (lambda p: skiff.bernoulli(p), 0.3, 0.3 * 0.7),
    "bernoulli_p": (lambda p: skiff.bernoulli(p, 0.5), 0.5, 0.25),
    "bernoulli_method": (lambda p: p.bernoulli(), 0.3, 0.3 * 0.7),
    "bernoulli_": (lambda p: skiff.empty_like(p).bernoulli_(0.5), 0.5, 0.25),
    "bernoulli_tensor_p": (lambda p: skiff.zeros_like(p).bernoulli_(p), 0.3, 0.21),
    "randint": (lambda p: skiff.randint(0, 10, (6,)) + 0 * p.long(), 4.5, 8.25),
    "randint_high": (lambda p: skiff.randint(10, (6,)).double() + 0 * p, 4.5, 8.25),
    "randint_like": (lambda p: skiff.randint_like(p, 3, 7), 4.5, 1.25),
    "normal_": (lambda p: skiff.empty_like(p).normal_(), 0.0, 1.0),
    "normal_mean_std": (lambda p: skiff.zeros_like(p).normal_(3.0, 0.5), 3.0, 0.25),
    "uniform_": (lambda p: skiff.empty_like(p).uniform_(-1.0, 3.0), 1.0, 16 / 12),
    "normal_fn": (lambda p: skiff.normal(p * 10, 2.0), 3.0, 4.0),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_one_batched_draw_per_sample(name):
    f, mean, var = DRAWS[name]
    probs = skiff.full((N, 6), 0.3, dtype=skiff.float64)
    out = _vmap(f, probs)
    assert out.shape == (N, 6)
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)
    assert _distinct_rows(out[:20]) >= 6  # each sample its own draw (1 if shared)
    se = np.sqrt(var / out.size)
    assert abs(out.mean() - mean) < 5 * se, (out.mean(), mean)
    assert abs(out.var() - var) < 0.05 * var + 1e-12, (out.var(), var)
    if name.startswith("bernoulli"):
        assert set(np.unique(out)) <= {0.0, 1.0}
    if name.startswith("randint"):
        lo, hi = (3, 6) if name == "randint_like" else (0, 9)
        assert out.min() == lo and out.max() == hi and np.all(out == np.round(out))


@pytest.mark.parametrize("name", ["bernoulli", "randint", "normal_", "normal_fn"])
def test_same_randomness_gives_one_draw(name):
    f = DRAWS[name][0]
    out = _vmap(f, skiff.full((8, 6), 0.3, dtype=skiff.float64), randomness="same")
    assert _distinct_rows(out) == 1


def test_dtypes_and_per_sample_probabilities():
    p = skiff.tensor(np.linspace(0, 1, 5)[:, None].repeat(2000, 1), dtype=skiff.float32)
    out = skiff.func.vmap(lambda q: skiff.bernoulli(q), randomness="different")(p)
    assert out.dtype == skiff.float32 and not vmap_r30.LOOPED
    rows = out.numpy().mean(1)
    np.testing.assert_allclose(rows, np.linspace(0, 1, 5), atol=0.05)
    assert rows[0] == 0 and rows[-1] == 1  # p = 0 and p = 1 exactly
    r = skiff.func.vmap(lambda q: skiff.randint(0, 5, (3,)), randomness="different")(p)
    assert r.dtype == skiff.int64 and tuple(r.shape) == (5, 3)


def test_dropout_by_hand_per_sample_gradients():
    """A hand-written inverted dropout (bernoulli_ mask) in per-sample gradients: each
    sample's gradient is 2 m s^2 (w x) x with its own 0/1 mask m."""
    w = skiff.randn(8, 4, dtype=skiff.float64)
    x = skiff.randn(32, 4, dtype=skiff.float64)
    s = 2.0

    def loss(w, xi):
        h = xi @ w.T
        m = skiff.empty_like(h).bernoulli_(0.5)
        return (h * m * s).pow(2).sum()

    g = skiff.func.vmap(skiff.func.grad(loss), in_dims=(None, 0), randomness="different")(w, x)
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)
    wx = (x @ w.T).numpy()
    m = g.numpy()[:, :, 0] / (2 * s * s * wx * x.numpy()[:, None, 0])
    assert np.all(np.isclose(m, 0) | np.isclose(m, 1))
    np.testing.assert_allclose(g.numpy(), 2 * s * s * (np.round(m) * wx)[:, :, None]
                               * x.numpy()[:, None, :], rtol=1e-10, atol=1e-12)
    assert len({tuple(r) for r in np.round(m).astype(int)}) > 1


FILLS = {  # name: (fill, the distribution's median (a mean where said) from its formula)
    "log_normal_": (lambda t: t.log_normal_(), np.exp(1.0)),
    "cauchy_": (lambda t: t.cauchy_(), 0.0),
    "geometric_": (lambda t: t.geometric_(0.5), 2.0),  # its mean 1/p (the median is 1 or 2)
    "random_": (lambda t: t.random_(0, 10), 4.5),  # its mean
    "exponential_": (lambda t: t.exponential_(2.0), np.log(2) / 2),
}


@pytest.mark.parametrize("name", sorted(FILLS))
def test_other_random_fills_batched(name):
    fill, median = FILLS[name]
    out = _vmap(lambda p: fill(skiff.empty_like(p)), skiff.zeros(N, 4, dtype=skiff.float64))
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)
    assert _distinct_rows(out[:20]) >= 6
    got = out.mean() if name in ("random_", "geometric_") else np.median(out)
    assert abs(got - median) < 0.1 * max(1.0, abs(median)), (got, median)


def test_normal_and_logspace_dtypes_as_torch():
    torch = pytest.importorskip("torch")
    for m in (torch, skiff):
        m.manual_seed(0)
    pairs = [(lambda m: m.normal(0.0, 1.0, (2,))),
             (lambda m: m.normal(m.zeros(2), 1.0)),
             (lambda m: m.normal(0.0, m.ones(2, dtype=m.float64))),
             (lambda m: m.normal(0.0, 1.0, (2,), dtype=m.float64)),
             (lambda m: m.logspace(0, 1, 3)),
             (lambda m: m.logspace(0, 1, 3, dtype=m.float64))]
    for f in pairs:
        assert str(f(skiff).dtype).split(".")[-1] == str(f(torch).dtype).split(".")[-1]
    np.testing.assert_allclose(skiff.logspace(0, 2, 3).numpy(), [1, 10, 100], rtol=1e-6)

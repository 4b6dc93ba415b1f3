"""Round 31: ``vmap`` rules for ``index_add``, ``scatter``/``scatter_add``/``scatter_reduce``
(and their in-place forms), against ``torch.func.vmap`` in float64, nothing looped; and
``randomness="different"`` dropout drawn once per sample (one batched draw)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import skiff  # noqa: E402
from skiff.kernels.train.core import vmap_r30  # noqa: E402


@pytest.fixture(autouse=True)
def _float64():
    old_t, old_s = torch.get_default_dtype(), skiff.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    skiff.set_default_dtype(skiff.float64)
    vmap_r30.LOOPED.clear()
    yield
    torch.set_default_dtype(old_t)
    skiff.set_default_dtype(old_s)


def _data(T, *shape, seed=0):
    return T.tensor(np.random.default_rng(seed).standard_normal(shape))


def _same(ours, theirs):
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)


def test_scatters_and_index_add_batched():
    def run(T):
        def f(x):  # one sample: (5, 3)
            i = T.tensor([0, 2, 1, 0, 2])
            a = T.zeros(3, 3).index_add(0, i, x)
            b = T.zeros(3, 3).scatter_add(0, i[:, None].expand(5, 3), x * 2)
            c = T.zeros(3, 3).scatter(0, T.tensor([[0, 1, 2], [2, 0, 1]]), x[:2])
            d = T.zeros(3, 3).scatter_reduce(0, i[:, None].expand(5, 3), x, reduce="mean",
                                             include_self=False)
            e = x.clone()
            e.index_add_(0, T.tensor([1, 1]), x[:2], alpha=0.5)
            h = x.index_add(1, T.tensor([2, 0, 2]), x * x)
            return a + b + c + d, e, h

        return T.func.vmap(f)(_data(T, 4, 5, 3))

    _same(run(skiff), run(torch))
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def test_per_sample_gradients_of_message_passing():
    def run(T):
        src, dst = T.tensor([0, 1, 2, 3, 1]), T.tensor([1, 2, 3, 0, 0])

        def loss(w, x, y):
            m = x[src] @ w
            agg = T.zeros(4, 2).index_add(0, dst, m)
            agg2 = T.zeros(4, 2).scatter_add(0, dst[:, None].expand(5, 2), m.tanh())
            return ((agg + agg2).sum(0) - y).pow(2).sum()

        return [T.func.vmap(T.func.grad(loss), in_dims=(None, 0, 0))(
            _data(T, 3, 2, seed=4), _data(T, 6, 4, 3, seed=1), _data(T, 6, 2, seed=2))]

    _same(run(skiff), run(torch))
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def test_dropout_different_per_sample_in_one_draw():
    skiff.manual_seed(0)
    w = skiff.randn(5, 8, 4)  # an ensemble of five
    x = skiff.randn(16, 4)

    def f(w, x):
        return skiff.nn.functional.dropout(x @ w.T, 0.5, training=True)

    out = skiff.func.vmap(f, in_dims=(0, None), randomness="different")(w, x).numpy()
    ref = (x @ w.transpose(1, 2)).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], 2 * ref[kept], rtol=1e-14)  # scaled by 1/(1-p)
    assert all((kept[0] != kept[k]).any() for k in range(1, 5))  # each member its own mask
    assert 0.4 < kept.mean() < 0.6
    same = skiff.func.vmap(f, in_dims=(0, None), randomness="same")(w, x).numpy() != 0
    assert all((same[0] == same[k]).all() for k in range(5))
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def test_dropout_different_per_sample_gradients():
    skiff.manual_seed(1)
    w = skiff.randn(8, 4)
    x = skiff.randn(16, 4)
    p = 0.3

    def loss(w, xi):
        return skiff.nn.functional.dropout(xi @ w.T, p).pow(2).sum()

    g = skiff.func.vmap(skiff.func.grad(loss), in_dims=(None, 0), randomness="different")(w, x)
    # d/dW sum((m s Wx)^2) = 2 m s^2 (Wx) x^T, m in {0, 1}: recover m and check it is 0 or 1
    wx = (x @ w.T).numpy()
    s = 1 / (1 - p)
    m = g.numpy()[:, :, 0] / (2 * s * s * wx * x.numpy()[:, None, 0])
    np.testing.assert_allclose(g.numpy(), 2 * s * s * (m * wx)[:, :, None]
                               * x.numpy()[:, None, :], rtol=1e-10, atol=1e-12)
    assert np.all(np.isclose(m, 0) | np.isclose(m, 1)) and 0 < m.mean() < 1
    assert len({tuple(r) for r in np.round(m).astype(int)}) > 1  # samples' masks differ
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)


def test_randn_like_and_rand_different_per_sample():
    skiff.manual_seed(2)

    def reparam(mu, logvar):  # a VAE's reparametrisation, one sample per call
        return mu + skiff.randn_like(mu) * (0.5 * logvar).exp() + skiff.rand(3) * 0

    mu, lv = skiff.zeros(6, 3), skiff.zeros(6, 3)
    diff = skiff.func.vmap(reparam, randomness="different")(mu, lv).numpy()
    assert len({tuple(np.round(r, 9)) for r in diff}) == 6
    same = skiff.func.vmap(reparam, randomness="same")(mu, lv).numpy()
    assert len({tuple(np.round(r, 9)) for r in same}) == 1
    big = skiff.func.vmap(lambda m: m + skiff.randn_like(m), randomness="different")(
        skiff.zeros(4000, 4)).numpy()
    assert abs(big.mean()) < 0.03 and abs(big.std() - 1) < 0.03
    assert not vmap_r30.LOOPED, dict(vmap_r30.LOOPED)

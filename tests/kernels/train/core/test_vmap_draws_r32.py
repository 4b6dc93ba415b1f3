"""Round 32: ``vmap(..., randomness="different")`` draws ``multinomial`` (with and without
replacement), ``poisson`` and ``randperm`` once for all samples (they looped the whole call),
and ``randomness="error"`` (the default) refuses a draw as torch does (the loop drew
freely). Oracles: torch's refusal, the distributions' own moments, structure (each sample
its own draw; permutations are permutations), and nothing looped (vmap_r30.LOOPED)."""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff.kernels.train.core import vmap_r30

torch = pytest.importorskip("torch")

N = 3000


@pytest.fixture(autouse=True)
def _clean():
    vmap_r30.LOOPED.clear()
    skiff.manual_seed(0)
    yield


def _vmap(f, *args, randomness="different"):
    return np.asarray(skiff.func.vmap(f, randomness=randomness)(*args).numpy())


def test_poisson_of_batched_rates_draws_once():
    rates = np.repeat([[0.5, 4.0, 20.0]], N, axis=0)
    out = _vmap(lambda r: skiff.poisson(r), skiff.tensor(rates, dtype=skiff.float64))
    assert out.shape == (N, 3) and out.dtype == np.float64
    assert not vmap_r30.LOOPED
    se = np.sqrt(rates[0] / N)
    assert np.all(np.abs(out.mean(0) - rates[0]) < 5 * se)
    assert np.all(np.abs(out.var(0) / rates[0] - 1) < 0.15)


def test_poisson_of_unbatched_rates_differs_per_sample():
    lam = skiff.tensor([3.0, 7.0], dtype=skiff.float64)
    out = _vmap(lambda x: skiff.poisson(lam) + x, skiff.zeros(N, 1, dtype=skiff.float64))
    assert not vmap_r30.LOOPED
    assert len({tuple(r) for r in out}) > 20
    assert np.all(np.abs(out.mean(0) - [3.0, 7.0]) < 5 * np.sqrt(np.array([3.0, 7.0]) / N))


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial_of_batched_weights(replacement):
    w = np.array([[1.0, 2.0, 0.0, 7.0], [5.0, 5.0, 0.0, 0.0]])
    out = _vmap(lambda p: skiff.multinomial(p, 2, replacement=replacement),
                skiff.tensor(np.repeat(w[None], N, 0), dtype=skiff.float64))
    assert out.shape == (N, 2, 2) and out.dtype == np.int64
    assert not vmap_r30.LOOPED
    assert not np.isin(out[:, 0], [2]).any() and np.isin(out[:, 1], [0, 1]).all()
    if not replacement:  # distinct ids per row
        assert (out[:, :, 0] != out[:, :, 1]).all()
        return
    freq = np.bincount(out[:, 0].ravel(), minlength=4) / out[:, 0].size
    np.testing.assert_allclose(freq, w[0] / w[0].sum(), atol=0.02)


def test_multinomial_method_of_unbatched_weights_differs_per_sample():
    p = skiff.tensor([0.25, 0.25, 0.25, 0.25], dtype=skiff.float64)
    out = _vmap(lambda x: p.multinomial(3) + x, skiff.zeros(200, 1, dtype=skiff.int64))
    assert not vmap_r30.LOOPED
    assert len({tuple(r) for r in out}) > 10


def test_randperm_is_a_permutation_per_sample():
    out = _vmap(lambda x: skiff.randperm(6) + x, skiff.zeros(500, 1, dtype=skiff.int64))
    assert out.dtype == np.int64 and not vmap_r30.LOOPED
    assert (np.sort(out, axis=1) == np.arange(6)).all()
    assert len({tuple(r) for r in out}) > 200
    same = _vmap(lambda x: skiff.randperm(6) + x, skiff.zeros(5, 1, dtype=skiff.int64),
                 randomness="same")
    assert (same == same[0]).all()


@pytest.mark.parametrize("draw", ["randn", "poisson", "bernoulli", "dropout", "randperm"])
def test_randomness_error_refuses_a_draw_as_torch(draw):
    def program(T):
        def f(x):
            if draw == "randn":
                return T.randn(1, dtype=T.float64) + x
            if draw == "poisson":
                return T.poisson(x)
            if draw == "bernoulli":
                return T.bernoulli(x / 8)
            if draw == "randperm":
                return T.randperm(3) + x
            return T.nn.functional.dropout(x, 0.5)

        return T.func.vmap(f)(T.full((4, 1), 4.0, dtype=T.float64))

    with pytest.raises(RuntimeError, match="randomness error mode") as ref:
        program(torch)
    with pytest.raises(RuntimeError, match="randomness error mode") as got:
        program(skiff)
    assert str(got.value).split(".")[0] == str(ref.value).split(".")[0]


def test_randomness_error_lets_a_model_in_eval_run():
    def run(T):
        lin = T.nn.Linear(3, 2).double()
        with T.no_grad():
            lin.weight.copy_(T.tensor([[1.0, 2, 3], [0, -1, 1]], dtype=T.float64))
            lin.bias.zero_()
        drop = T.nn.Dropout(0.5).eval()
        return T.func.vmap(lambda x: drop(lin(x)))(T.ones(4, 3, dtype=T.float64))

    np.testing.assert_allclose(run(skiff).detach().numpy(), run(torch).detach().numpy(),
                               rtol=1e-12)

"""Round 27: ``skiff.distributions`` against torch 2.13's in float64: ``log_prob``,
``entropy``, ``cdf``, ``kl_divergence`` (values and gradients of the parameters), ``rsample``'s
reparameterisation gradient, and the sample moments (the draws are skiff's, the law torch's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(99)
LOC, SCALE = RNG.standard_normal((3, 4)), RNG.uniform(0.5, 2.0, (3, 4))
LOC2, SCALE2 = RNG.standard_normal((3, 4)), RNG.uniform(0.5, 2.0, (3, 4))
X = RNG.standard_normal((3, 4))
LOGITS, LOGITS2 = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
P = RNG.uniform(0.05, 0.95, (3, 4))


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _run(lib, fn, *arrays):
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib.distributions, lib, *ts)
    (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum().backward()
    return [_np(out)] + [None if t.grad is None else _np(t.grad) for t in ts]


CASES = {
    "normal_log_prob": (lambda D, L, m, s: D.Normal(m, s).log_prob(L.tensor(X)), [LOC, SCALE]),
    "normal_entropy": (lambda D, L, m, s: D.Normal(m, s).entropy(), [LOC, SCALE]),
    "normal_cdf": (lambda D, L, m, s: D.Normal(m, s).cdf(L.tensor(X)), [LOC, SCALE]),
    "normal_kl": (lambda D, L, m, s: D.kl_divergence(D.Normal(m, s),
                                                     D.Normal(L.tensor(LOC2), L.tensor(SCALE2))),
                  [LOC, SCALE]),
    "independent": (lambda D, L, m, s: D.Independent(D.Normal(m, s), 1).log_prob(L.tensor(X)),
                    [LOC, SCALE]),
    "independent_kl": (lambda D, L, m, s: D.kl_divergence(
        D.Independent(D.Normal(m, s), 1),
        D.Independent(D.Normal(L.tensor(LOC2), L.tensor(SCALE2)), 1)), [LOC, SCALE]),
    "categorical_logits": (lambda D, L, z: D.Categorical(logits=z).log_prob(
        L.tensor([0, 4, 2])), [LOGITS]),
    "categorical_probs": (lambda D, L, p: D.Categorical(probs=p.exp()).log_prob(
        L.tensor([[1, 3, 0], [2, 2, 4]])), [LOGITS]),  # (sample, batch) values
    "categorical_entropy": (lambda D, L, z: D.Categorical(logits=z).entropy(), [LOGITS]),
    "categorical_kl": (lambda D, L, z: D.kl_divergence(
        D.Categorical(logits=z), D.Categorical(logits=L.tensor(LOGITS2))), [LOGITS]),
    "bernoulli_probs": (lambda D, L, p: D.Bernoulli(probs=p).log_prob(
        L.tensor((X > 0).astype(float))), [P]),
    "bernoulli_logits_entropy": (lambda D, L, z: D.Bernoulli(logits=z).entropy(), [X]),
    "bernoulli_kl": (lambda D, L, p: D.kl_divergence(
        D.Bernoulli(probs=p), D.Bernoulli(probs=L.tensor(P[::-1].copy()))), [P]),
    "uniform": (lambda D, L, lo: D.Uniform(lo, lo + 2).log_prob(lo + 0.5) + D.Uniform(
        lo, lo + 2).entropy(), [LOC]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(name):
    fn, arrays = CASES[name]
    got, want = _run(skiff, fn, *arrays), _run(torch, fn, *arrays)
    for a, b in zip(got, want):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14, err_msg=name)


def test_rsample_gradient_and_moments():
    skiff.manual_seed(0)
    loc = skiff.tensor(LOC[0], requires_grad=True)
    scale = skiff.tensor(SCALE[0], requires_grad=True)
    z = skiff.distributions.Normal(loc, scale).rsample((20000,))
    assert tuple(z.shape) == (20000, 4)
    z.sum().backward()
    eps = (_np(z) - LOC[0]) / SCALE[0]
    np.testing.assert_allclose(_np(loc.grad), np.full(4, 20000.0))
    np.testing.assert_allclose(_np(scale.grad), eps.sum(0), rtol=1e-10)
    np.testing.assert_allclose(_np(z).mean(0), LOC[0], atol=0.05)
    np.testing.assert_allclose(_np(z).std(0), SCALE[0], rtol=0.03)
    s = skiff.distributions.Normal(loc, scale).sample()
    assert not s.requires_grad


def test_discrete_sample_frequencies():
    skiff.manual_seed(1)
    torch.manual_seed(1)
    p = np.array([0.1, 0.6, 0.3])
    fs = np.bincount(_np(skiff.distributions.Categorical(probs=skiff.tensor(p)).sample(
        (30000,))), minlength=3) / 30000
    ft = np.bincount(_np(torch.distributions.Categorical(probs=torch.tensor(p)).sample(
        (30000,))), minlength=3) / 30000
    np.testing.assert_allclose(fs, ft, atol=0.015)
    b = _np(skiff.distributions.Bernoulli(probs=skiff.tensor([0.2, 0.9])).sample((20000,)))
    bt = _np(torch.distributions.Bernoulli(probs=torch.tensor([0.2, 0.9])).sample((20000,)))
    np.testing.assert_allclose(b.mean(0), bt.mean(0), atol=0.015)
    with pytest.raises(NotImplementedError, match="closed form"):
        skiff.distributions.kl_divergence(skiff.distributions.Normal(0.0, 1.0),
                                          skiff.distributions.Bernoulli(probs=0.5))

"""Round 29: ``MultivariateNormal``, ``MixtureSameFamily``, ``Laplace``, ``Exponential``,
``Gamma``, ``Beta`` against torch 2.13's distributions in float64: log_prob, entropy, cdf,
mean, variance, KL and the gradients of each with respect to the parameters; draws against
torch's mean and variance (the law, not the numbers)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

RNG = np.random.default_rng(2902)


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach())


def _both(fn, *arrays, rtol=1e-10):
    """``fn(lib, *params)`` -> a tensor; value and parameter gradients equal torch's."""
    res = []
    for lib in (skiff, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *ts)
        G = np.cos(np.arange(out.numel()) * 0.7 + 0.3).reshape(tuple(out.shape))
        (out * lib.tensor(G)).sum().backward()
        res.append([out] + [t.grad for t in ts])
    for i, (a, b) in enumerate(zip(*res)):
        if b is None:
            assert a is None or not np.any(_np(a)), i
            continue
        np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=1e-12, err_msg=str(i))


def _spd(*batch, k=3):
    a = RNG.standard_normal(batch + (k, k))
    return a @ np.swapaxes(a, -1, -2) + k * np.eye(k)


@pytest.mark.parametrize("how", ["covariance_matrix", "precision_matrix", "scale_tril"])
@pytest.mark.parametrize("what", ["log_prob", "entropy", "variance", "covariance_matrix",
                                  "precision_matrix", "scale_tril"])
def test_multivariate_normal(how, what):
    loc = RNG.standard_normal((2, 3))
    m = _spd(2)
    if how == "scale_tril":
        m = np.linalg.cholesky(m)
    x = RNG.standard_normal((5, 2, 3))

    def fn(lib, loc, m):
        d = lib.distributions.MultivariateNormal(loc, **{how: m})
        if what == "log_prob":
            return d.log_prob(lib.tensor(x))
        if what == "entropy":
            return d.entropy()
        return getattr(d, what)

    _both(fn, loc, m)


def test_multivariate_normal_broadcast_and_kl():
    loc = RNG.standard_normal((4, 3))
    cov = _spd()  # one matrix for four means
    loc2, cov2 = RNG.standard_normal(3), _spd(4)
    x = RNG.standard_normal((4, 3))

    def fn(lib, loc, cov, loc2, cov2):
        D = lib.distributions
        p = D.MultivariateNormal(loc, cov)
        q = D.MultivariateNormal(loc2, covariance_matrix=cov2)
        assert tuple(p.batch_shape) == (4,) and tuple(p.event_shape) == (3,)
        return lib.stack([p.log_prob(x_t(lib)), D.kl_divergence(p, q), D.kl_divergence(q, p)])

    def x_t(lib):
        return lib.tensor(x)

    _both(fn, loc, cov, loc2, cov2)


def test_multivariate_normal_draws_follow_the_law():
    skiff.manual_seed(1)
    loc, cov = np.array([1.0, -2.0]), np.array([[2.0, 0.6], [0.6, 0.5]])
    d = skiff.distributions.MultivariateNormal(skiff.tensor(loc), skiff.tensor(cov))
    s = np.asarray(d.sample((20000,)))
    assert s.shape == (20000, 2)
    np.testing.assert_allclose(s.mean(0), loc, atol=0.05)
    np.testing.assert_allclose(np.cov(s.T), cov, atol=0.06)
    t = torch.distributions.MultivariateNormal(torch.tensor(loc), torch.tensor(cov))
    assert tuple(d.rsample((3,)).shape) == tuple(t.rsample((3,)).shape) == (3, 2)
    np.testing.assert_allclose(_np(d.covariance_matrix), t.covariance_matrix.numpy(), rtol=1e-12)


def test_multivariate_normal_refuses_two_matrices():
    with pytest.raises(ValueError, match="exactly one"):
        skiff.distributions.MultivariateNormal(skiff.zeros(2), skiff.eye(2),
                                               scale_tril=skiff.eye(2))


@pytest.mark.parametrize("comp,what", [
    (c, w) for c in ("normal", "independent", "mvn", "laplace")
    for w in ("log_prob", "mean", "variance", "cdf")
    if not (w == "cdf" and c in ("independent", "mvn"))])  # torch has no cdf for these
def test_mixture_same_family(comp, what):
    logits = RNG.standard_normal((4, 3))
    mu = RNG.standard_normal((4, 3, 2) if comp in ("independent", "mvn") else (4, 3))
    ls = 0.3 * RNG.standard_normal(mu.shape)
    x = RNG.standard_normal((6, 4, 2) if comp in ("independent", "mvn") else (6, 4))

    def fn(lib, logits, mu, ls):
        D = lib.distributions
        if comp == "normal":
            c = D.Normal(mu, ls.exp())
        elif comp == "laplace":
            c = D.Laplace(mu, ls.exp())
        elif comp == "independent":
            c = D.Independent(D.Normal(mu, ls.exp()), 1)
        else:
            tril = ls.exp().unsqueeze(-1) * lib.eye(2, dtype=lib.float64)
            c = D.MultivariateNormal(mu, scale_tril=tril)
        m = D.MixtureSameFamily(D.Categorical(logits=logits), c)
        if what in ("log_prob", "cdf"):
            return getattr(m, what)(lib.tensor(x))
        return getattr(m, what)

    _both(fn, logits, mu, ls)


def test_mixture_sample_shape_and_moments():
    skiff.manual_seed(2)
    D = skiff.distributions
    m = D.MixtureSameFamily(D.Categorical(probs=skiff.tensor([0.2, 0.8], dtype=skiff.float64)),
                            D.Normal(skiff.tensor([-3.0, 2.0], dtype=skiff.float64),
                                     skiff.tensor([0.5, 1.0], dtype=skiff.float64)))
    t = torch.distributions.MixtureSameFamily(
        torch.distributions.Categorical(probs=torch.tensor([0.2, 0.8], dtype=torch.float64)),
        torch.distributions.Normal(torch.tensor([-3.0, 2.0], dtype=torch.float64),
                                   torch.tensor([0.5, 1.0], dtype=torch.float64)))
    s = np.asarray(m.sample((40000,)))
    assert s.shape == (40000,)
    assert abs(s.mean() - t.mean.item()) < 0.05
    assert abs(s.var() - t.variance.item()) < 0.15


_FAMILIES = [
    ("Laplace", (RNG.standard_normal(5), np.exp(RNG.standard_normal(5))), RNG.standard_normal(5)),
    ("Exponential", (np.exp(RNG.standard_normal(5)),), np.exp(RNG.standard_normal(5))),
    ("Gamma", (np.exp(RNG.standard_normal(5)) + 0.5, np.exp(RNG.standard_normal(5))),
     np.exp(RNG.standard_normal(5))),
    ("Beta", (np.exp(RNG.standard_normal(5)) + 0.3, np.exp(RNG.standard_normal(5)) + 0.3),
     RNG.uniform(0.05, 0.95, 5)),
]


@pytest.mark.parametrize("name,params,x,what", [
    (*f, w) for f in _FAMILIES for w in ("log_prob", "entropy", "mean", "variance", "cdf")
    if not (w == "cdf" and f[0] in ("Gamma", "Beta"))])  # torch has no cdf for these
def test_scalar_families(name, params, x, what):

    def fn(lib, *ps):
        d = getattr(lib.distributions, name)(*ps)
        if what in ("log_prob", "cdf"):
            return getattr(d, what)(lib.tensor(x))
        if what == "entropy":
            return d.entropy()
        return getattr(d, what)

    # torch's trigamma (digamma's gradient) is 2e-10..5e-10 off scipy.special.polygamma(1, x);
    # skiff's agrees with scipy's to the last digit
    _both(fn, *params, rtol=1e-8 if what == "entropy" else 1e-10)


@pytest.mark.parametrize("name,params", [("Laplace", (1.0, 2.0)), ("Exponential", (1.5,)),
                                         ("Gamma", (2.5, 1.5)), ("Beta", (2.0, 5.0))])
def test_scalar_families_draws(name, params):
    skiff.manual_seed(3)
    d = getattr(skiff.distributions, name)(*[skiff.tensor(p, dtype=skiff.float64) for p in params])
    t = getattr(torch.distributions, name)(*[torch.tensor(p, dtype=torch.float64) for p in params])
    s = np.asarray(d.sample((40000,)))
    assert s.shape == (40000,)
    sd = t.stddev.item()
    assert abs(s.mean() - t.mean.item()) < 4 * sd / np.sqrt(40000)
    assert abs(s.std() - sd) < 0.03 * sd

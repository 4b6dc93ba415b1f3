"""Round 32: ``Poisson``, ``Dirichlet``, ``StudentT``, ``LogNormal``, ``Cauchy``,
``Binomial``, ``Geometric``, ``OneHotCategorical`` (distributions_r32.py) and
``Normal.icdf``: log_prob, entropy, moments, cdf/icdf and their gradients against torch 2.13
in float64 (1e-10); samples by their moments (the draws are skiff's generator's)."""

import numpy as np
import pytest

from skiff.kernels.train.core import distributions as D0
from skiff.kernels.train.core import distributions_r32 as D1
from skiff.kernels.train.core.tensor import Tensor

torch = pytest.importorskip("torch")
TD = torch.distributions


class _SD:  # skiff's families under torch's module names
    def __getattr__(self, name):
        return getattr(D1, name, None) or getattr(D0, name)


def _params(T):
    rng = np.random.default_rng(0)

    def t(a):
        return T.tensor(np.asarray(a, dtype=np.float64), dtype=T.float64)

    loc = t(rng.standard_normal(3))
    sc = t(np.exp(rng.standard_normal(3)))
    loc.requires_grad_(True)
    sc.requires_grad_(True)
    return loc, sc, t


def _programs(T, D):
    loc, sc, t = _params(T)
    v = t([0.3, -1.2, 2.5])
    pos = t([0.2, 1.5, 4.0])
    cases = [
        D.Poisson(sc).log_prob(t([0.0, 2.0, 5.0])),
        D.Dirichlet(sc + 0.5).log_prob(t([0.2, 0.3, 0.5])), D.Dirichlet(sc + 0.5).entropy(),
        D.Dirichlet(sc + 0.5).mean, D.Dirichlet(sc + 0.5).variance,
        D.StudentT(sc + 2, loc, sc).log_prob(v), D.StudentT(sc + 2, loc, sc).entropy(),
        D.StudentT(3.0, loc, sc).variance,
        D.LogNormal(loc, sc).log_prob(pos), D.LogNormal(loc, sc).entropy(),
        D.LogNormal(loc, sc).mean, D.LogNormal(loc, sc).variance, D.LogNormal(loc, sc).cdf(pos),
        D.LogNormal(loc, sc).icdf(t([0.1, 0.5, 0.8])),
        D.Cauchy(loc, sc).log_prob(v), D.Cauchy(loc, sc).entropy(), D.Cauchy(loc, sc).cdf(v),
        D.Cauchy(loc, sc).icdf(t([0.1, 0.5, 0.8])),
        D.Binomial(10, logits=loc).log_prob(t([3.0, 5.0, 10.0])),
        D.Binomial(t([4.0, 6.0, 8.0]), probs=loc.sigmoid()).log_prob(t([0.0, 6.0, 2.0])),
        D.Binomial(10, logits=loc).mean, D.Binomial(10, logits=loc).variance,
        D.Geometric(logits=loc).log_prob(t([0.0, 2.0, 1.0])), D.Geometric(logits=loc).entropy(),
        D.Geometric(probs=loc.sigmoid()).log_prob(t([1.0, 0.0, 4.0])),
        D.Geometric(probs=loc.sigmoid()).mean,
        D.OneHotCategorical(logits=loc).log_prob(t([0.0, 1.0, 0.0])),
        D.OneHotCategorical(logits=loc).entropy(),
        D.Normal(loc, sc).icdf(t([0.1, 0.5, 0.9])),
    ]
    sum(c.sum() for c in cases).backward()
    return cases + [loc.grad, sc.grad]


def test_families_equal_torch():
    import skiff

    got, ref = _programs(skiff, _SD()), _programs(torch, TD)
    for k, (g, r) in enumerate(zip(got, ref)):
        np.testing.assert_allclose(g.detach().numpy(), r.detach().numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=f"case {k}")


def test_samples_follow_the_law():
    import skiff

    skiff.manual_seed(0)
    n = 20000
    checks = [
        (D1.Poisson(Tensor(np.array([0.5, 4.0]))), [0.5, 4.0]),
        (D1.Dirichlet(Tensor(np.array([1.0, 2.0, 3.0]))), [1 / 6, 2 / 6, 3 / 6]),
        (D1.StudentT(5.0, 1.0, 2.0), 1.0),
        (D1.LogNormal(0.0, 0.5), float(np.exp(0.125))),
        (D1.Binomial(10, probs=Tensor(np.array([0.3]))), [3.0]),
        (D1.Geometric(probs=Tensor(np.array([0.25]))), [3.0]),
        (D1.OneHotCategorical(probs=Tensor(np.array([0.2, 0.8]))), [0.2, 0.8]),
    ]
    for dist, mean in checks:
        x = np.asarray(dist.sample((n,)).numpy())
        np.testing.assert_allclose(x.mean(0), mean, rtol=0.05, atol=0.02,
                                   err_msg=type(dist).__name__)
    c = np.asarray(D1.Cauchy(0.0, 1.0).sample((n,)).numpy())
    assert abs(np.median(c)) < 0.05

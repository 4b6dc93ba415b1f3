"""Round 32's torch names reach users as torch's do: ``skiff.distributions.Poisson`` and the
seven others, ``skiff.scalar_tensor`` / ``mvlgamma`` / ``i0`` / ``swapdims`` (defined in the
core but not public: AttributeError), each checked against torch 2.13."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name, args, value", [
    ("Poisson", (3.0,), 2.0), ("Geometric", (0.3,), 2.0), ("LogNormal", (0.1, 0.7), 1.3),
    ("Cauchy", (0.2, 1.5), -0.4), ("StudentT", (4.0,), 0.8), ("Binomial", (10, 0.3), 4.0)])
def test_distributions_log_prob_as_torch(name, args, value):
    ours = getattr(skiff.distributions, name)(*[skiff.tensor(a, dtype=skiff.float64)
                                               if isinstance(a, float) else a for a in args])
    theirs = getattr(torch.distributions, name)(*[torch.tensor(a, dtype=torch.float64)
                                                  if isinstance(a, float) else a for a in args])
    got = ours.log_prob(skiff.tensor(value, dtype=skiff.float64))
    want = theirs.log_prob(torch.tensor(value, dtype=torch.float64))
    assert abs(float(got) - float(want)) < 1e-10
    assert name in skiff.distributions.__all__


def test_dirichlet_and_one_hot_are_public():
    a = np.array([0.5, 1.5, 2.0])
    x = np.array([0.2, 0.3, 0.5])
    got = skiff.distributions.Dirichlet(skiff.tensor(a)).log_prob(skiff.tensor(x))
    want = torch.distributions.Dirichlet(torch.tensor(a)).log_prob(torch.tensor(x))
    assert abs(float(got) - float(want)) < 1e-10
    p = np.array([0.2, 0.3, 0.5])
    got = skiff.distributions.OneHotCategorical(probs=skiff.tensor(p)).log_prob(
        skiff.tensor([0.0, 1.0, 0.0]))
    assert abs(float(got) - np.log(0.3)) < 1e-12


def test_top_level_names_as_torch():
    assert skiff.scalar_tensor(3).dtype == skiff.float32  # torch: float32 by default
    assert float(skiff.scalar_tensor(3)) == float(torch.scalar_tensor(3))
    x = np.array([1.7, 2.5, 3.2])
    np.testing.assert_allclose(skiff.mvlgamma(skiff.tensor(x), 2).numpy(),
                               torch.mvlgamma(torch.tensor(x), 2).numpy(), rtol=1e-12)
    np.testing.assert_allclose(skiff.i0(skiff.tensor(x)).numpy(),
                               torch.i0(torch.tensor(x)).numpy(), rtol=1e-9)
    a = np.arange(6.0).reshape(2, 3)
    assert skiff.swapdims(skiff.tensor(a), 0, 1).numpy().tolist() == \
        torch.swapdims(torch.tensor(a), 0, 1).numpy().tolist()
    for name in ("scalar_tensor", "mvlgamma", "i0", "swapdims"):
        assert name in dir(skiff)


def test_random_initial_seed_as_torch():
    skiff.manual_seed(5)
    torch.manual_seed(5)
    assert skiff.random.initial_seed() == torch.random.initial_seed() == 5
    assert "initial_seed" in skiff.random.__all__

"""Round 36 (h4): torch's ``validate_args`` (on by default) for skiff's distributions: a
parameter outside its constraint raises at construction, a ``log_prob`` value outside the
support raises, with torch's ValueError and words; ``validate_args=False`` and
``Distribution.set_default_validate_args(False)`` turn it off (skiff returned nan, -inf or a
number before)."""

import numpy as np
import pytest

import skiff

torch = pytest.importorskip("torch")

# float32 log-probabilities through a few libm calls (log, lgamma, log1p): each within a couple
# of ulps of the exact value, but not the same ulps on every CPU (numpy picks its SIMD log by
# the CPU's features): 2.2 float32 eps apart from torch's here, 0.9 with AVX2 only (round 48
# h9; 1e-6, 8 eps, left a margin of 4x); 64 eps keeps 29x and is far under a wrong formula's
F32_RTOL = 64 * float(np.finfo(np.float32).eps)

BAD_ARGS = {
    "normal_scale": lambda L: L.distributions.Normal(0.0, -1.0),
    "bernoulli_probs": lambda L: L.distributions.Bernoulli(probs=L.tensor([1.3])),
    "categorical_neg": lambda L: L.distributions.Categorical(probs=L.tensor([-0.1, 1.1])),
    "exponential_rate": lambda L: L.distributions.Exponential(L.tensor([0.0])),
    "gamma_rate": lambda L: L.distributions.Gamma(L.tensor(2.0), L.tensor(-3.0)),
    "beta": lambda L: L.distributions.Beta(L.tensor(0.0), L.tensor(3.0)),
    "laplace_scale": lambda L: L.distributions.Laplace(0.0, 0.0),
    "poisson_rate": lambda L: L.distributions.Poisson(L.tensor(-1.0)),
    "lognormal_nan": lambda L: L.distributions.LogNormal(float("nan"), 1.0),
    "studentt_df": lambda L: L.distributions.StudentT(L.tensor(-1.0)),
    "dirichlet": lambda L: L.distributions.Dirichlet(L.tensor([1.0, 0.0])),
    "binomial_probs": lambda L: L.distributions.Binomial(3, probs=L.tensor(1.5)),
}

BAD_VALUES = {
    "bernoulli": lambda L: L.distributions.Bernoulli(probs=L.tensor([0.3])).log_prob(
        L.tensor([0.5])),
    "categorical": lambda L: L.distributions.Categorical(logits=L.tensor([1.0, 3.0])).log_prob(
        L.tensor(2)),
    "beta": lambda L: L.distributions.Beta(L.tensor(2.0), L.tensor(3.0)).log_prob(
        L.tensor(1.5)),
    "uniform": lambda L: L.distributions.Uniform(0.0, 1.0).log_prob(L.tensor(2.0)),
    "exponential": lambda L: L.distributions.Exponential(L.tensor(2.0)).log_prob(
        L.tensor(-1.0)),
    "poisson": lambda L: L.distributions.Poisson(L.tensor(2.0)).log_prob(L.tensor(1.5)),
    "dirichlet": lambda L: L.distributions.Dirichlet(L.tensor([1.0, 2.0])).log_prob(
        L.tensor([0.2, 0.3])),
    "binomial": lambda L: L.distributions.Binomial(10, probs=L.tensor(0.3)).log_prob(
        L.tensor(11.0)),
    "geometric": lambda L: L.distributions.Geometric(probs=L.tensor(0.3)).log_prob(
        L.tensor(-1.0)),
    "lognormal": lambda L: L.distributions.LogNormal(0.0, 1.0).log_prob(L.tensor(0.0)),
}


@pytest.mark.parametrize("name", sorted(BAD_ARGS))
def test_invalid_parameters_raise_as_torch(name):
    for lib in (skiff, torch):
        with pytest.raises(ValueError, match="Expected parameter .* to satisfy the constraint"):
            BAD_ARGS[name](lib)


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_values_outside_the_support_raise_as_torch(name):
    for lib in (skiff, torch):
        with pytest.raises(ValueError, match="Expected value argument .* to be within the "
                                             "support"):
            BAD_VALUES[name](lib)


def test_validation_can_be_turned_off_as_torch():
    for lib in (skiff, torch):
        D = lib.distributions
        assert np.isneginf(float(D.Uniform(0.0, 1.0, validate_args=False).log_prob(
            lib.tensor(2.0))))
        D.Normal(0.0, -1.0, validate_args=False)  # no error
        D.Distribution.set_default_validate_args(False)
        try:
            D.Normal(0.0, -1.0)
            D.Beta(lib.tensor(2.0), lib.tensor(3.0)).log_prob(lib.tensor(1.5))
        finally:
            D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError):
            D.Normal(0.0, -1.0)


def test_valid_arguments_keep_torchs_values():
    cases = [lambda L: L.distributions.Categorical(probs=L.tensor([1.0, 3.0])).log_prob(
                 L.tensor([0, 1])),
             lambda L: L.distributions.Binomial(10, probs=L.tensor(0.3)).log_prob(
                 L.tensor([0.0, 10.0])),
             lambda L: L.distributions.Uniform(0.0, 1.0).log_prob(L.tensor([0.0, 1.0])),
             lambda L: L.distributions.Bernoulli(logits=L.tensor([-np.inf, 0.0])).log_prob(
                 L.tensor([0.0, 1.0])),
             lambda L: L.distributions.Poisson(L.tensor(0.0)).log_prob(L.tensor(0.0))]
    for f in cases:
        np.testing.assert_allclose(f(skiff).numpy(), f(torch).numpy(), rtol=F32_RTOL)
    assert bool(skiff.distributions.Normal(0.0, 1.0).support.check(skiff.tensor(1.0)))
    assert repr(skiff.distributions.Beta(skiff.tensor(1.0), skiff.tensor(1.0)).support) == repr(
        torch.distributions.Beta(torch.tensor(1.0), torch.tensor(1.0)).support)


def test_perplexity_as_torch():
    for make in (lambda L: L.distributions.Categorical(logits=L.tensor([[0.0, 1.0, 2.0]])),
                 lambda L: L.distributions.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, 3.0]))):
        np.testing.assert_allclose(make(skiff).perplexity().numpy(),
                                   make(torch).perplexity().numpy(), rtol=F32_RTOL)

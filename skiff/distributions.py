"""``skiff.distributions``: torch's ``Normal``, ``Categorical``, ``Bernoulli``, ``Uniform``,
``Independent``, ``kl_divergence`` and ``register_kl``; the public names of
:mod:`skiff.kernels.train.core.distributions`."""

from skiff.kernels.train.core.distributions import (  # noqa: F401
    Bernoulli,
    Categorical,
    Distribution,
    Independent,
    Normal,
    Uniform,
    kl_divergence,
    register_kl,
)

__all__ = ["Distribution", "Normal", "Categorical", "Bernoulli", "Uniform", "Independent",
           "kl_divergence", "register_kl"]

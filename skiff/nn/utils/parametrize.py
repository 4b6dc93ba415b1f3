"""``skiff.nn.utils.parametrize``: torch's ``register_parametrization``,
``remove_parametrizations``, ``is_parametrized``, ``cached``; the public name of
:mod:`skiff.kernels.train.core.nn.parametrize`."""

from skiff.kernels.train.core.nn.parametrize import (  # noqa: F401
    ParametrizationList,
    cached,
    is_parametrized,
    register_parametrization,
    remove_parametrizations,
    type_before_parametrizations,
)

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "ParametrizationList", "type_before_parametrizations"]

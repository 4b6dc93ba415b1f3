"""``skiff.models``: the built-in models (``MLP``, ``CNN``, ``GPT``) and ``get(name)``.

The public name of :mod:`skiff.kernels.train.models`; the same classes."""

from skiff.kernels.train.models import (  # noqa: F401
    BUILTIN_DATA,
    BUILTIN_MODELS,
    CNN,
    DEFAULT_DATA,
    GPT,
    MLP,
    GPTConfig,
    get,
    names,
)

__all__ = [
    "MLP",
    "CNN",
    "GPT",
    "GPTConfig",
    "get",
    "names",
    "BUILTIN_MODELS",
    "BUILTIN_DATA",
    "DEFAULT_DATA",
]

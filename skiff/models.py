"""``skiff.models``: the built-in models (``MLP``, ``CNN``, ``GPT``) and ``get(name)``.

The public name of :mod:`skiff.kernels.train.models`; the same classes."""

from skiff.kernels.train import models as _real
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

__all__ = list(_real.__all__)  # the same names as skiff.kernels.train.models

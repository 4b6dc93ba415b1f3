"""``skiff.nn.utils.parametrizations``: torch's ``weight_norm`` (``original0``/``original1``),
``spectral_norm`` (``original``, buffers ``0._u``/``0._v``) and ``orthogonal`` (``original``,
buffer ``0.base``: :mod:`skiff.kernels.train.core.nn.orthogonal_r31`); the public names of
:func:`skiff.kernels.train.core.nn.weight_norm.parametrized_weight_norm` and
:func:`skiff.kernels.train.core.nn.spectral_norm.parametrized_spectral_norm`."""

from skiff.kernels.train.core.nn.orthogonal_r31 import orthogonal
from skiff.kernels.train.core.nn.spectral_norm import parametrized_spectral_norm as spectral_norm
from skiff.kernels.train.core.nn.weight_norm import parametrized_weight_norm as weight_norm

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]

"""``skiff.nn.init``: torch's in-place initialisers (``nn.init.xavier_uniform_(w)``).

The public name of :mod:`skiff.kernels.train.core.nn.init`; the same functions."""

from skiff.kernels.train.core.nn import init as _real
from skiff.kernels.train.core.nn.init import (  # noqa: F401
    _calculate_correct_fan,
    _calculate_fan_in_and_fan_out,
    calculate_gain,
    constant_,
    dirac_,
    eye_,
    kaiming_normal_,
    kaiming_uniform_,
    normal_,
    ones_,
    orthogonal_,
    sparse_,
    trunc_normal_,
    uniform_,
    xavier_normal_,
    xavier_uniform_,
    zeros_,
)

__all__ = list(_real.__all__)  # the same names as skiff.kernels.train.core.nn.init

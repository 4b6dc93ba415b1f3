"""``skiff.nn.utils``: torch's ``nn.utils`` (``clip_grad_norm_``, ``clip_grad_value_``,
``parameters_to_vector``, ``vector_to_parameters``); the public name of
:mod:`skiff.kernels.train.core.nn.utils`."""

from skiff.kernels.train.core.nn import utils as _real
from skiff.kernels.train.core.nn.utils import (  # noqa: F401
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)

__all__ = list(_real.__all__)

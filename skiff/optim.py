"""``skiff.optim``: optimizers and learning-rate schedules.

The public name of :mod:`skiff.kernels.train.core.optim`; the same classes."""

from skiff.kernels.train.core import optim as _real
from skiff.kernels.train.core.optim import (  # noqa: F401
    SGD,
    AdamW,
    ConstantLR,
    LRSchedule,
    Optimizer,
    WarmupCosine,
    adamw_update,
    clip_grad_norm_,
)

__all__ = list(_real.__all__)  # the same names as skiff.kernels.train.core.optim

"""``skiff.optim.lr_scheduler``: torch's schedules under torch's names (the public name of
:mod:`skiff.kernels.train.core.lr_scheduler`)."""

from skiff.kernels.train.core import lr_scheduler as _real
from skiff.kernels.train.core.lr_scheduler import (  # noqa: F401
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiplicativeLR,
    MultiStepLR,
    OneCycleLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
    WarmupCosine,
    _LRScheduler,
)

__all__ = list(_real.__all__)

"""``skiff.amp``: torch's ``torch.amp`` names, ``autocast`` and ``GradScaler`` (torch's
signature); the public names of :mod:`skiff.kernels.train.core.amp_torch`. ``autocast`` keeps
the tensors' dtypes (see there); skiff's own 16-bit training is ``MixedPrecision``."""

from skiff.kernels.train.core.amp_torch import (  # noqa: F401
    GradScaler,
    autocast,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype",
           "is_autocast_available"]

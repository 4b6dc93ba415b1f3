"""``skiff.utils.checkpoint``: torch's ``checkpoint`` and ``checkpoint_sequential``; the
public names of :mod:`skiff.kernels.train.core.checkpoint_torch`."""

from skiff.kernels.train.core.checkpoint_torch import (  # noqa: F401
    checkpoint,
    checkpoint_sequential,
)

__all__ = ["checkpoint", "checkpoint_sequential"]

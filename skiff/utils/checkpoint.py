"""``skiff.utils.checkpoint``: torch's ``checkpoint`` and ``checkpoint_sequential``; the
public names of :mod:`skiff.kernels.train.core.checkpoint_torch`."""

from skiff.kernels.train.core.checkpoint_torch import (  # noqa: F401
    CheckpointPolicy,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
)

__all__ = ["checkpoint", "checkpoint_sequential", "create_selective_checkpoint_contexts",
           "CheckpointPolicy"]

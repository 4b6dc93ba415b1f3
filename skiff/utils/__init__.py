"""``skiff.utils``: torch's ``utils`` names; ``skiff.utils.data`` holds ``TensorDataset`` and
a tensor ``DataLoader`` for hand-written loops; ``skiff.utils.checkpoint`` torch's
activation checkpointing."""

from . import checkpoint, data  # noqa: F401

__all__ = ["checkpoint", "data"]

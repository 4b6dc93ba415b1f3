"""``skiff.utils``: torch's ``utils`` names; ``skiff.utils.data`` holds ``TensorDataset`` and
a tensor ``DataLoader`` for hand-written loops."""

from . import data  # noqa: F401

__all__ = ["data"]

"""``skiff.utils.data``: torch's ``Dataset``, ``TensorDataset``, ``Subset``, ``random_split``
and ``DataLoader`` (batches of tensors); the public name of
:mod:`skiff.kernels.train.core.utils_data`."""

from skiff.kernels.train.core import utils_data as _real
from skiff.kernels.train.core.utils_data import (  # noqa: F401
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

__all__ = list(_real.__all__)

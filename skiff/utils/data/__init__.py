"""``skiff.utils.data``: torch's ``Dataset``, ``TensorDataset``, ``Subset``, ``random_split``
and ``DataLoader`` (batches of tensors); the public name of
:mod:`skiff.kernels.train.core.utils_data` (and the samplers of
:mod:`~skiff.kernels.train.core.utils_data_samplers`); torch's submodule paths
(``dataloader``, ``dataset``, ``sampler``, ``distributed``) reach the same classes."""

from skiff.kernels.train.core import utils_data as _real
from skiff.kernels.train.core.utils_data import (  # noqa: F401
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)
from skiff.kernels.train.core.utils_data_samplers import (  # noqa: F401
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

from . import dataloader, dataset, distributed, sampler  # noqa: F401,E402  (torch's paths)

__all__ = [*_real.__all__, "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]

"""``skiff.utils.data.sampler``: torch's ``torch.utils.data.sampler`` import path."""

from skiff.kernels.train.core.utils_data_samplers import (  # noqa: F401
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]

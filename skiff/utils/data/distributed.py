"""``skiff.utils.data.distributed``: torch's ``torch.utils.data.distributed`` import path."""

from skiff.kernels.train.core.utils_data_samplers import DistributedSampler  # noqa: F401

__all__ = ["DistributedSampler"]

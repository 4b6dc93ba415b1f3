"""``skiff.utils.data.dataloader``: torch's ``torch.utils.data.dataloader`` import path
(``DataLoader``, ``default_collate``, ``get_worker_info``)."""

from skiff.kernels.train.core.utils_data import (  # noqa: F401
    DataLoader,
    default_collate,
    default_convert,
    get_worker_info,
)

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

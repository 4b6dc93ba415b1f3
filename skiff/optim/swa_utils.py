"""``skiff.optim.swa_utils``: torch's ``AveragedModel``, ``SWALR``, ``update_bn``,
``get_ema_avg_fn``, ``get_ema_multi_avg_fn``, ``get_swa_avg_fn``, ``get_swa_multi_avg_fn``;
the public names of :mod:`skiff.kernels.train.core.swa_utils`."""

from skiff.kernels.train.core.swa_utils import (  # noqa: F401
    SWALR,
    AveragedModel,
    get_ema_avg_fn,
    get_ema_multi_avg_fn,
    get_swa_avg_fn,
    get_swa_multi_avg_fn,
    update_bn,
)

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn"]

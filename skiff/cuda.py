"""``skiff.cuda``: torch.cuda's common calls (``is_available``, ``device_count``,
``current_device``, ``get_device_name``, ``synchronize``, ``empty_cache``, ``manual_seed``,
``manual_seed_all``, ``is_bf16_supported``); the public name of
:data:`skiff.kernels.train.core.torch_runtime.cuda`."""

from skiff.kernels.train.core.torch_runtime import cuda as _cuda

is_available = _cuda.is_available
device_count = _cuda.device_count
current_device = _cuda.current_device
get_device_name = _cuda.get_device_name
synchronize = _cuda.synchronize
empty_cache = _cuda.empty_cache
manual_seed = _cuda.manual_seed
manual_seed_all = _cuda.manual_seed_all
is_bf16_supported = _cuda.is_bf16_supported

__all__ = ["is_available", "device_count", "current_device", "get_device_name", "synchronize",
           "empty_cache", "manual_seed", "manual_seed_all", "is_bf16_supported"]

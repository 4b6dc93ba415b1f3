"""``skiff.cuda``: torch.cuda's common calls (``is_available``, ``device_count``,
``current_device``, ``get_device_name``, ``synchronize``, ``empty_cache``, ``manual_seed``,
``manual_seed_all``, ``is_bf16_supported``); the public name of
:data:`skiff.kernels.train.core.torch_runtime.cuda`. ``skiff.cuda.amp.GradScaler`` /
``skiff.cuda.amp.autocast``: torch's old spellings of ``skiff.amp.GradScaler("cuda", ...)`` /
``skiff.amp.autocast("cuda", ...)``, deprecated as in torch (a FutureWarning)."""

import sys
import types

from skiff.kernels.train.core.amp_torch import CudaAutocast as _CudaAutocast
from skiff.kernels.train.core.amp_torch import CudaGradScaler as _CudaGradScaler
from skiff.kernels.train.core.torch_runtime import cuda as _cuda

amp = types.ModuleType("skiff.cuda.amp", "torch.cuda.amp's names: ``GradScaler`` and "
                       "``autocast`` (deprecated there: use ``skiff.amp``'s with 'cuda').")
amp.GradScaler = _CudaGradScaler
amp.autocast = _CudaAutocast
amp.__all__ = ["GradScaler", "autocast"]
sys.modules.setdefault("skiff.cuda.amp", amp)  # `from skiff.cuda.amp import GradScaler`

is_available = _cuda.is_available
device_count = _cuda.device_count
current_device = _cuda.current_device
get_device_name = _cuda.get_device_name
synchronize = _cuda.synchronize
empty_cache = _cuda.empty_cache
manual_seed = _cuda.manual_seed
manual_seed_all = _cuda.manual_seed_all
is_bf16_supported = _cuda.is_bf16_supported

__all__ = ["amp", "is_available", "device_count", "current_device", "get_device_name",
           "synchronize", "empty_cache", "manual_seed", "manual_seed_all", "is_bf16_supported"]

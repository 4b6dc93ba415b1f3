"""``skiff.cpu``: torch.cpu's common calls (``is_available``, ``device_count``,
``current_device``, ``synchronize``) and ``skiff.cpu.amp.autocast`` (torch's old spelling of
``skiff.amp.autocast("cpu", ...)``, deprecated as in torch: a FutureWarning), and
``skiff.cpu.amp.GradScaler`` (the same)."""

import sys
import types

from skiff.kernels.train.core.amp_torch import CpuAutocast as _CpuAutocast
from skiff.kernels.train.core.amp_torch import CpuGradScaler as _CpuGradScaler

amp = types.ModuleType("skiff.cpu.amp", "torch.cpu.amp's names: ``autocast`` and "
                       "``GradScaler`` (deprecated there: use ``skiff.amp``'s with 'cpu').")
amp.autocast = _CpuAutocast
amp.GradScaler = _CpuGradScaler
amp.__all__ = ["autocast", "GradScaler"]
sys.modules.setdefault("skiff.cpu.amp", amp)  # `from skiff.cpu.amp import autocast`


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: skiff's CPU ops return when done."""


__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]

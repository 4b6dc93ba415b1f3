"""Device layer: devices, the array module per device, custom operators with reference twins."""

from .arrays import device_of, get_array_module, to_device, to_numpy, use_device, xp_for
from .devices import (
    Device,
    DeviceError,
    cpu_count,
    cupy,
    gpu_available,
    list_devices,
    resolve_device,
)
from .ops import CustomOp, custom_op, get_op, numba_available, registered_ops

__all__ = [
    "CustomOp",
    "Device",
    "DeviceError",
    "cpu_count",
    "cupy",
    "custom_op",
    "device_of",
    "get_array_module",
    "get_op",
    "gpu_available",
    "list_devices",
    "numba_available",
    "registered_ops",
    "resolve_device",
    "to_device",
    "to_numpy",
    "use_device",
    "xp_for",
]

"""The array module per device: numpy on the CPU, cupy on a GPU.

Kernel code is written against ``xp = get_array_module(x)`` and never imports cupy itself.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from .devices import Device, cupy, resolve_device

__all__ = ["get_array_module", "xp_for", "to_device", "to_numpy", "device_of", "use_device"]


def get_array_module(*arrays):
    """numpy, or cupy when any argument is a cupy array."""
    cp = cupy()
    if cp is not None:
        for a in arrays:
            if isinstance(a, cp.ndarray):
                return cp
    return np


def xp_for(device: Device | str | None):
    """The array module that holds arrays for ``device``."""
    dev = resolve_device(device)
    if dev.is_gpu:
        return cupy()
    return np


def device_of(array) -> Device:
    """The device an array lives on (a tensor asks at every step: answered from a cache, so
    its ``free_memory`` is as of the first question; :func:`resolve_device` reads it anew)."""
    cp = cupy()
    if cp is not None and isinstance(array, cp.ndarray):
        return _known_device(f"cuda:{array.device.id}")
    return _known_device("cpu")


@functools.lru_cache(maxsize=64)
def _known_device(name: str) -> Device:
    # resolve_device asks the driver for every GPU's properties and free memory: about 13 ms
    # on a virtualised H200, more than half of a small model's training step
    return resolve_device(name)


def to_device(array, device: Device | str | None):
    """Copy (or pass through) ``array`` to ``device``."""
    dev = resolve_device(device)
    if not dev.is_gpu:
        return to_numpy(array)
    cp = cupy()
    with cp.cuda.Device(dev.index):
        return cp.asarray(array)


def to_numpy(array):
    """A host numpy array for a numpy or cupy array (or anything array-like)."""
    cp = cupy()
    if cp is not None and isinstance(array, cp.ndarray):
        return cp.asnumpy(array)
    return np.asarray(array)


@contextlib.contextmanager
def use_device(device: Device | str | None):
    """Make ``device`` current for new cupy arrays (no-op on the CPU)."""
    dev = resolve_device(device)
    if dev.is_gpu:
        with cupy().cuda.Device(dev.index):
            yield dev
    else:
        yield dev

"""torch's ``meta`` device: tensors with a shape and a dtype but no memory, the usual way to
build a big model before loading its checkpoint (transformers, torchtune)::

    with torch.device("meta"):          # or nn.Linear(4, 3, device="meta")
        model = Net()                   # no weights allocated
    model.load_state_dict(sd, assign=True)   # the checkpoint's tensors become the model's
    # or: model.to_empty(device="cpu"); model.load_state_dict(sd)

A meta array is a :class:`MetaArray`: numpy's zero-strided broadcast of one element to the
shape (read-only, a few bytes whatever its size), so ``shape``/``dtype``/``numel`` answer as
torch's. Writes into it (``init.normal_``, ``copy_`` of ``reset_parameters``) are no-ops, as
torch's on meta tensors. Reading values is refused in torch's words (``item()``, ``numpy()``,
``.to("cpu")``: "Cannot copy out of meta tensor; no data!"). A module built under the
context has every parameter and buffer meta (each made meta when it is registered, so a big
model never holds more than one layer's weights at once, and again when the outermost
constructor returns). Arithmetic on meta tensors is numpy's on the broadcast zeros (a result
of the right shape, not memoryless).
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["MetaArray", "MetaDevice", "META", "meta_array", "is_meta", "is_meta_spec",
           "meta_mode", "NO_DATA"]

NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaArray(np.ndarray):
    """A meta tensor's array: the shape and dtype of a broadcast single element."""

    def __setitem__(self, key, value):  # torch's writes into a meta tensor: nothing happens
        if self.flags.writeable:
            np.ndarray.__setitem__(self, key, value)

    def __iadd__(self, other):
        return self if not self.flags.writeable else np.ndarray.__iadd__(self, other)

    def __isub__(self, other):
        return self if not self.flags.writeable else np.ndarray.__isub__(self, other)

    def __imul__(self, other):
        return self if not self.flags.writeable else np.ndarray.__imul__(self, other)

    def __itruediv__(self, other):
        return self if not self.flags.writeable else np.ndarray.__itruediv__(self, other)


def meta_array(shape, dtype) -> MetaArray:
    """A meta array of ``shape`` and ``dtype`` (no memory but one element)."""
    return np.broadcast_to(np.zeros((), dtype=np.dtype(dtype)), tuple(shape)).view(MetaArray)


def is_meta(array) -> bool:
    return isinstance(array, MetaArray)


class MetaDevice:
    """torch's ``device("meta")``; also a context manager (``with torch.device("meta"):``)
    under which modules are built with meta parameters and buffers."""

    type = "meta"
    name = "meta"
    kind = "meta"
    index = None
    is_gpu = False

    def __str__(self):
        return "meta"

    def __repr__(self):
        return "device(type='meta')"

    def __eq__(self, other):
        return isinstance(other, MetaDevice) or (isinstance(other, str) and other == "meta") \
            or getattr(other, "type", None) == "meta"

    def __hash__(self):
        return hash("meta")

    def __enter__(self):
        _DEPTH[0] += 1
        return self

    def __exit__(self, *exc):
        _DEPTH[0] -= 1
        return False


class _Depth(threading.local):
    """How many meta contexts this thread is in (torch's device context is per thread: a
    job's thread builds its model on its own device while a notebook cell is in one)."""

    n = 0

    def __getitem__(self, _):
        return self.n

    def __setitem__(self, _, value):
        self.n = value


META = MetaDevice()
_DEPTH = _Depth()


def meta_mode() -> bool:
    """Inside ``with torch.device("meta"):`` (or a ``device="meta"`` constructor)."""
    return _DEPTH[0] > 0


def is_meta_spec(device) -> bool:
    """``"meta"``, ``torch.device("meta")`` (skiff's or torch's)."""
    if device is None:
        return False
    if isinstance(device, MetaDevice):
        return True
    return (isinstance(device, str) and device == "meta") or (
        not isinstance(device, str) and getattr(device, "type", None) == "meta")


def make_meta(t) -> None:
    """Turn tensor ``t`` (and its gradient) meta in place."""
    if t is None or is_meta(t._data):
        return
    t._data = meta_array(t._data.shape, t._data.dtype)
    if getattr(t, "_grad", None) is not None:
        t._grad = None

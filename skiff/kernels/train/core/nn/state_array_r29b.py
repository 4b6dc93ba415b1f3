"""The arrays ``Module.state_dict()`` returns: host numpy copies (as before: every numpy use,
``torch.from_numpy``, ``np.savez`` and ``load_state_dict`` take them unchanged) that also
answer the Tensor calls torch programs make on a state dict's values, e.g. keeping the best
weights during training: ``{k: v.cpu().clone() for k, v in model.state_dict().items()}``,
``v.detach()``, ``v.to(device)``, ``v.float()``, ``v.numel()``, ``v.copy_(w)``.

What differs from torch: these are copies, not views of the parameters: reading one after
training shows the values it was taken with (torch's shows the new ones). Writing into one
writes through to its parameter or buffer, as torch's views do (round 41): ``copy_``,
``mul_``/``add_``/``lerp_``/``fill_``/``zero_``, ``v *= d``, ``v += x``, ``v[...] = x``, so
the EMA of timm's ``ModelEma`` and YOLOv5's ``ModelEMA`` (``for k, v in
ema.state_dict().items(): v *= d; v += (1 - d) * msd[k].detach()``) updates the model; a
``clone()`` (or any result of arithmetic) is the dict's own. ``v.size`` is numpy's element
count, not torch's ``size()`` method (use ``v.shape``).
"""

from __future__ import annotations

import weakref

import numpy as np


class StateArray(np.ndarray):
    """A numpy array with torch's Tensor calls that make sense on a saved copy."""

    requires_grad = False
    is_cuda = False
    grad = None

    @property
    def dtype(self):
        """numpy's dtype answering torch's ``is_floating_point``/``is_complex``/``is_signed``
        (YOLOv5's EMA: ``if v.dtype.is_floating_point``); numpy takes it as its own."""
        from ..dtype_r42 import torch_dtype

        return torch_dtype(np.ndarray.dtype.__get__(self))

    @dtype.setter
    def dtype(self, value):
        np.ndarray.dtype.__set__(self, np.dtype(value))

    def clone(self, *, memory_format=None):
        return np.array(self, copy=True).view(StateArray)

    def detach(self):
        return self

    def cpu(self):
        return self

    def contiguous(self, memory_format=None):
        return self

    def numpy(self, *, force=False):
        return self.view(np.ndarray)

    def to(self, *args, **kwargs):
        """``to(device)`` keeps the array (it is host memory); ``to(dtype)`` converts."""
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, np.ndarray):
                dtype = a.dtype
            elif not isinstance(a, str) and type(a).__name__ != "device":
                try:
                    dtype = np.dtype(a)
                except TypeError:
                    pass
        return self if dtype is None or np.dtype(dtype) == self.dtype else \
            self.astype(np.dtype(dtype))

    def float(self):
        return self.astype(np.float32)

    def double(self):
        return self.astype(np.float64)

    def half(self):
        return self.astype(np.float16)

    def long(self):
        return self.astype(np.int64)

    def numel(self):
        return int(np.ndarray.__getattribute__(self, "size"))

    def dim(self):
        return self.ndim

    def is_floating_point(self):
        return self.dtype.kind == "f"

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, np.ndarray) and hasattr(src, "detach"):
            src = src.detach().numpy()  # a skiff or torch tensor
        np.copyto(self, np.asarray(src), casting="same_kind")
        return self._write_through()

    # ---- writes reach the module's tensor (torch's state dict values are its views) ------
    def _write_through(self):
        ref = self.__dict__.get("_source")
        t = ref() if ref is not None else None
        if t is not None and tuple(t._data.shape) == self.shape:
            if isinstance(t._data, np.ndarray):
                np.copyto(t._data, self.view(np.ndarray), casting="unsafe")
            else:  # a GPU tensor
                from skiff.kernels.backend import to_device

                t._data[...] = to_device(self.view(np.ndarray), t.device).astype(t._data.dtype)
        return self

    def __setitem__(self, key, value):
        np.ndarray.__setitem__(self, key, value)
        self._write_through()

    def __iadd__(self, other):
        np.ndarray.__iadd__(self, _arr(other))
        return self._write_through()

    def __isub__(self, other):
        np.ndarray.__isub__(self, _arr(other))
        return self._write_through()

    def __imul__(self, other):
        np.ndarray.__imul__(self, _arr(other))
        return self._write_through()

    def __itruediv__(self, other):
        np.ndarray.__itruediv__(self, _arr(other))
        return self._write_through()

    def mul_(self, other):
        return self.__imul__(other)

    def add_(self, other, *, alpha=1):
        return self.__iadd__(_arr(other) * alpha if alpha != 1 else other)

    def sub_(self, other, *, alpha=1):
        return self.__isub__(_arr(other) * alpha if alpha != 1 else other)

    def div_(self, other):
        return self.__itruediv__(other)

    def lerp_(self, end, weight):
        return self.__iadd__((_arr(end) - self.view(np.ndarray)) * _arr(weight))

    def fill_(self, value):
        self.view(np.ndarray).fill(value)
        return self._write_through()

    def zero_(self):
        return self.fill_(0)

    def __reduce__(self):  # pickles (torch.save of a state dict) as a plain array
        return np.ndarray.__reduce__(self.view(np.ndarray))


def _arr(x):
    if not isinstance(x, np.ndarray) and hasattr(x, "detach"):
        return x.detach().numpy()
    return x.view(np.ndarray) if isinstance(x, StateArray) else x


def state_array(arr, source=None) -> np.ndarray:
    """``arr`` (a fresh host copy) seen as a :class:`StateArray`; ``source`` the tensor it
    was copied from, which writes into it reach."""
    if not isinstance(arr, np.ndarray):
        return arr
    out = arr.view(StateArray)
    if source is not None:
        try:
            out.__dict__["_source"] = weakref.ref(source)
        except TypeError:
            pass
    return out

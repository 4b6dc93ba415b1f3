"""The arrays ``Module.state_dict()`` returns: host numpy copies (as before: every numpy use,
``torch.from_numpy``, ``np.savez`` and ``load_state_dict`` take them unchanged) that also
answer the Tensor calls torch programs make on a state dict's values, e.g. keeping the best
weights during training: ``{k: v.cpu().clone() for k, v in model.state_dict().items()}``,
``v.detach()``, ``v.to(device)``, ``v.float()``, ``v.numel()``, ``v.copy_(w)``.

What differs from torch: these are copies, not views of the parameters (a ``copy_`` into one
changes the dict, not the model: load it back with ``load_state_dict``); ``v.size`` is
numpy's element count, not torch's ``size()`` method (use ``v.shape``).
"""

from __future__ import annotations

import numpy as np


class StateArray(np.ndarray):
    """A numpy array with torch's Tensor calls that make sense on a saved copy."""

    requires_grad = False
    is_cuda = False
    grad = None

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
        return self

    def __reduce__(self):  # pickles (torch.save of a state dict) as a plain array
        return np.ndarray.__reduce__(self.view(np.ndarray))


def state_array(arr) -> np.ndarray:
    """``arr`` (a fresh host copy) seen as a :class:`StateArray`."""
    return arr.view(StateArray) if isinstance(arr, np.ndarray) else arr

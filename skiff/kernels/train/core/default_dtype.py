"""torch's default float dtype: ``set_default_dtype(float64)`` makes float tensors built from
Python numbers and lists, the creation functions (``zeros``, ``randn``, ``arange(0.5, ...)``,
...) and new layers' parameters float64, as torch's does.

``FLOAT`` is read where a float dtype is not given (``tensor.as_array``, the creation functions,
the layers' ``dtype=None``); a numpy array or tensor that has a float dtype keeps it, except
that float64 input becomes float32 while the default is float32 (skiff's rule: float32 unless
asked)."""

from __future__ import annotations

import numpy as np

__all__ = ["get_default_dtype", "set_default_dtype", "default_float"]

FLOAT = np.dtype(np.float32)
_ALLOWED = (np.dtype(np.float32), np.dtype(np.float64))


def get_default_dtype():
    """The dtype of float tensors made from Python numbers (float32 unless set)."""
    return FLOAT


def set_default_dtype(dtype) -> None:
    """torch's ``set_default_dtype``: float32 or float64."""
    global FLOAT
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in _ALLOWED:
        raise TypeError(f"set_default_dtype({dtype}): only float32 and float64 can be the "
                        "default float dtype (pass dtype= to a creation function for another)")
    FLOAT = dt


def default_float(dtype=None):
    """``dtype``, or the default float dtype when it is None."""
    return FLOAT if dtype is None else dtype

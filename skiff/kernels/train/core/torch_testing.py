"""torch's ``testing.assert_close``: values (and, by default, dtypes and shapes) equal within
torch's default tolerances for the dtype (float64: rtol 1e-7, atol 1e-7; float32: 1.3e-6,
1e-5; float16: 1e-3, 1e-5; exact for integers and bools), on tensors, arrays, numbers and
sequences or dicts of them; the message names the greatest differences, as torch's."""

from __future__ import annotations

import numpy as np

from .tensor import Tensor

__all__ = ["assert_close"]

_TOL = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
        "float64": (1e-7, 1e-7)}


def _array(x):
    if isinstance(x, Tensor):
        return x.detach().numpy()
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        return x.detach().cpu().numpy()
    return np.asarray(x)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or sorted(actual) != sorted(expected):
            raise AssertionError(msg or f"the keys differ: {sorted(actual)} != "
                                 f"{sorted(expected)}")
        for k in expected:
            assert_close(actual[k], expected[k], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
        return
    if isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(msg or f"the lengths differ: {len(actual)} != {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
        return
    a, e = _array(actual), _array(expected)
    if a.shape != e.shape:
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: "
                             f"{a.shape} != {e.shape}.")
    if check_dtype and isinstance(actual, Tensor) == isinstance(expected, Tensor) \
            and a.dtype != e.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: "
                             f"{a.dtype} != {e.dtype}.")
    if rtol is None:
        rtol, atol = _TOL.get(np.result_type(a, e).name, (0.0, 0.0))
    if a.dtype.kind in "fc" or e.dtype.kind in "fc":
        close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    else:
        close = a == e
    if not np.all(close):
        bad = int((~close).sum())
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        where = np.unravel_index(np.nanargmax(np.where(close, -np.inf, diff)), a.shape) \
            if a.ndim else ()
        rel = diff / np.maximum(np.abs(e.astype(np.float64)), np.finfo(np.float64).tiny)
        raise AssertionError(msg or (
            f"Tensor-likes are not close!\n\nMismatched elements: {bad} / {a.size} "
            f"({100.0 * bad / max(a.size, 1):.1f}%)\nGreatest absolute difference: "
            f"{np.nanmax(diff)} at index {tuple(int(i) for i in where)} (up to {atol} "
            f"allowed)\nGreatest relative difference: {np.nanmax(rel)} (up to {rtol} "
            f"allowed)"))

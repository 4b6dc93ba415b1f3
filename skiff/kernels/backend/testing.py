"""Test helpers: check every fast implementation of an op against its reference twin."""

from __future__ import annotations

import numpy as np

from .arrays import to_numpy
from .ops import CustomOp, backend_of

__all__ = ["check_op", "assert_close"]


def assert_close(actual, expected, *, rtol=1e-6, atol=1e-8, what="value"):
    """Compare (tuples of) arrays; the message shows the worst element."""
    if isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            raise AssertionError(f"{what}: {len(actual)} outputs, expected {len(expected)}")
        for k, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol=rtol, atol=atol, what=f"{what}[{k}]")
        return
    a = np.asarray(to_numpy(actual), dtype=np.float64)
    e = np.asarray(to_numpy(expected), dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape} != expected {e.shape}")
    err = np.abs(a - e)
    tol = atol + rtol * np.abs(e)
    if not np.all(err <= tol):
        i = tuple(int(k) for k in np.unravel_index(np.argmax(err - tol), err.shape))
        raise AssertionError(
            f"{what}: max abs error {err.max():.3e} at {i} (got {float(a[i])!r}, "
            f"expected {float(e[i])!r}, "
            f"rtol={rtol}, atol={atol})"
        )


def check_op(op: CustomOp, *args, rtol=1e-6, atol=1e-8, require_fast=False, **kwargs) -> list[str]:
    """Run every available fast implementation of ``op`` on the backend of ``args`` and
    compare it with the reference. Returns the names checked.

    Arguments are copied per call so in-place implementations cannot contaminate each other.
    """
    backend = backend_of(*args)
    expected = op.reference(*_copy(args), **kwargs)
    checked = []
    for impl in op.available_impls(backend):
        got = impl.fn(*_copy(args), **kwargs)
        assert_close(got, expected, rtol=rtol, atol=atol, what=f"{op.name}[{impl.name}]")
        checked.append(impl.name)
    if require_fast and not checked:
        raise AssertionError(f"{op.name}: no fast implementation available on {backend}")
    return checked


def _copy(args):
    return tuple(a.copy() if hasattr(a, "copy") and hasattr(a, "shape") else a for a in args)

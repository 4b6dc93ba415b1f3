"""The thread count of numpy's BLAS, read and set in a running process (no threadpoolctl).

``OPENBLAS_NUM_THREADS`` only acts when the library loads; a process that plans for ranks
which will run at another count (a dry run of ``--np 2`` in a shell whose BLAS has every
core), or an MPI rank started by a bare ``mpiexec`` (each rank's BLAS on every core of the
node) must change it afterwards. threadpoolctl does that where installed; without it this
module calls the ``openblas_set_num_threads`` of the OpenBLAS numpy loaded (numpy's wheels
bundle ``scipy_openblas``, whose symbols carry a prefix and a ``64_`` suffix). Another BLAS
(MKL, Accelerate) is left alone: :func:`get` says None there.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os

__all__ = ["get", "set", "limited"]

_NAMES = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads"))
_lib: tuple | None = None


def _functions():
    """(get, set) of the OpenBLAS numpy uses, or (None, None)."""
    global _lib
    if _lib is not None:
        return _lib
    _lib = (None, None)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return _lib
    here = os.path.dirname(os.path.dirname(np.__file__))
    candidates = sorted(glob.glob(os.path.join(here, "numpy.libs", "*openblas*.so*")))
    candidates += sorted(glob.glob(os.path.join(os.path.dirname(np.__file__), ".dylibs",
                                                "*openblas*")))
    handles = []
    for path in candidates:
        try:  # already loaded by numpy: this returns the same handle
            handles.append(ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) |
                                       ctypes.RTLD_GLOBAL))
        except OSError:
            continue
    with contextlib.suppress(OSError):
        handles.append(ctypes.CDLL(None))  # a system numpy linked to a system OpenBLAS
    for handle in handles:
        for get_name, set_name in _NAMES:
            getter = getattr(handle, get_name, None)
            setter = getattr(handle, set_name, None)
            if getter is not None and setter is not None:
                getter.restype = ctypes.c_int
                getter.argtypes = []
                setter.restype = None
                setter.argtypes = [ctypes.c_int]
                _lib = (getter, setter)
                return _lib
    return _lib


def get() -> int | None:
    """The threads numpy's BLAS runs a matmul on now (None: not an OpenBLAS found here)."""
    getter, _ = _functions()
    return None if getter is None else int(getter())


def set(n: int) -> bool:  # noqa: A001 - the module's verb, as threadpoolctl's
    """Run numpy's BLAS on ``n`` threads from now on; False where it could not be set."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(max(1, int(n)), user_api="blas")
        return True
    except ImportError:
        pass
    _, setter = _functions()
    if setter is None:
        return False
    setter(max(1, int(n)))
    return True


@contextlib.contextmanager
def limited(n: int | None):
    """Numpy's BLAS on ``n`` threads inside the block, back to its count after (``None``, or
    a BLAS this module cannot set: unchanged). Yields the count in effect."""
    before = get()
    if n is None or before is None or int(n) == before:
        yield before
        return
    set(int(n))
    try:
        yield get()
    finally:
        set(before)

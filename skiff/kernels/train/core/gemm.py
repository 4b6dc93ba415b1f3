"""Matrix products the training step can record in a CUDA graph.

``mm(a, b)`` is ``a @ b`` (numpy's rules for operands of two or more axes). Inside
:func:`own_cublas` on a GPU (the captured step of :mod:`.graph` and its eager warm-up) it
calls cuBLAS through a handle of skiff's own, with ctypes: cupy's cuBLAS wrappers (up to cupy
14) refuse a stream that is being captured, though cuBLAS itself records into a graph once its
stream and workspace are set (both are, here, before the first call on a stream). The
reference twin is ``a @ b``; tests/gpu_readiness compares the two on a GPU.

Layouts: each operand's last two axes are row-major or a transposed view of row-major (as
``w.T`` and ``swapaxes`` give); batch axes must match (or the right operand is 2-D and the
left one's rows are merged); anything else is first copied into a contiguous array.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading

import numpy as np

from skiff.kernels.backend import cupy

from .autograd import xp_of

__all__ = ["mm", "own_cublas", "active"]

_local = threading.local()
_WORKSPACE = 32 << 20  # bytes: cuBLAS's recommendation for Hopper
_OP_N, _OP_T = 0, 1


def active() -> bool:
    return bool(getattr(_local, "on", False))


@contextlib.contextmanager
def own_cublas():
    """``mm`` goes through skiff's cuBLAS handle inside this block (this thread only)."""
    before = active()
    _local.on = True
    try:
        yield
    finally:
        _local.on = before


def mm(a, b):
    """``a @ b``; inside :func:`own_cublas` with cupy arrays of float32/float64, one cuBLAS
    strided-batched GEMM on the current stream (capturable)."""
    if not active() or xp_of(a) is np:
        return a @ b
    return _cublas_mm(a, b)


# ---- the ctypes side ---------------------------------------------------------------------------
class CublasError(RuntimeError):
    pass


@functools.lru_cache(maxsize=1)
def _lib():  # pragma: no cover - GPU
    import cupy_backends.cuda.libs.cublas  # noqa: F401  - loads the library cupy links to

    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            name = line.rsplit("/", 1)[-1].strip()
            if name.startswith("libcublas.so"):
                path = line.split(None, 5)[-1].strip()
                break
    lib = ctypes.CDLL(path or "libcublas.so")
    vp, i, ll, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_size_t
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(vp)]
    lib.cublasSetStream_v2.argtypes = [vp, vp]
    lib.cublasSetWorkspace_v2.argtypes = [vp, vp, sz]
    for fn in (lib.cublasSgemmStridedBatched, lib.cublasDgemmStridedBatched):
        fn.argtypes = [vp, i, i, i, i, i, vp, vp, i, ll, vp, i, ll, vp, vp, i, ll, i]
    for fn in (lib.cublasCreate_v2, lib.cublasSetStream_v2, lib.cublasSetWorkspace_v2,
               lib.cublasSgemmStridedBatched, lib.cublasDgemmStridedBatched):
        fn.restype = i
    return lib


def _check(status: int, what: str) -> None:
    if status != 0:
        raise CublasError(f"{what} returned cuBLAS status {status}")


class _Handle:  # pragma: no cover - GPU
    """One per thread and device: the handle, its workspace, the stream it was last set to."""

    def __init__(self, cp):
        lib = _lib()
        self.ptr = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(self.ptr)), "cublasCreate")
        # from the process pool, not a captured step's own pool: it outlives every graph
        with cp.cuda.using_allocator(cp.get_default_memory_pool().malloc):
            self.workspace = cp.empty(_WORKSPACE, dtype=cp.uint8)
        self.stream = None

    def on(self, stream_ptr: int):
        if self.stream != stream_ptr:  # setting a stream resets the workspace: set both
            lib = _lib()
            _check(lib.cublasSetStream_v2(self.ptr, ctypes.c_void_p(stream_ptr)),
                   "cublasSetStream")
            _check(lib.cublasSetWorkspace_v2(self.ptr, ctypes.c_void_p(self.workspace.data.ptr),
                                             ctypes.c_size_t(_WORKSPACE)), "cublasSetWorkspace")
            self.stream = stream_ptr
        return self.ptr


def _handle(cp):  # pragma: no cover - GPU
    key = cp.cuda.Device().id
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    if key not in handles:
        handles[key] = _Handle(cp)
    return handles[key]


def layout(x, itemsize: int):
    """How cuBLAS (column-major) reads the row-major matrices of ``x`` (..., r, c): ``(op,
    ld, batch_stride)`` giving x's transpose for op N, or None when x must be copied first
    (strides in elements; the batch axes must nest into one stride, in row-major order)."""
    if any(s % itemsize for s in x.strides):
        return None
    r, c = x.shape[-2:]
    sr, sc = (s // itemsize for s in x.strides[-2:])
    if sc == 1 and sr >= max(c, 1):
        op, ld = _OP_N, sr
    elif sr == 1 and r > 1 and sc >= r:
        op, ld = _OP_T, sc
    else:
        return None
    axes = [(d, s // itemsize) for d, s in zip(x.shape[:-2], x.strides[:-2]) if d != 1]
    for (_, outer), (d, inner) in zip(axes, axes[1:]):
        if outer != inner * d:
            return None
    return op, ld, (axes[-1][1] if axes else 0)


def _cublas_mm(a, b):  # pragma: no cover - GPU
    cp = cupy()
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64) or a.ndim < 2 \
            or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        return a @ b if not _capturing(cp) else _refuse(a, b)
    if b.ndim == 2 and a.ndim > 2:  # rows of every batch item against one matrix
        lead = a.shape[:-1]
        a2 = a.reshape(-1, a.shape[-1]) if a.flags.c_contiguous else \
            cp.ascontiguousarray(a).reshape(-1, a.shape[-1])
        return _gemm(cp, a2, b).reshape(lead + (b.shape[-1],))
    if a.shape[:-2] != b.shape[:-2]:
        return a @ b if not _capturing(cp) else _refuse(a, b)
    return _gemm(cp, a, b)


def _gemm(cp, a, b):  # pragma: no cover - GPU
    isz = a.dtype.itemsize
    la, lb = layout(a, isz), layout(b, isz)
    if la is None:
        a = cp.ascontiguousarray(a)
        la = layout(a, isz)
    if lb is None:
        b = cp.ascontiguousarray(b)
        lb = layout(b, isz)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = int(np.prod(a.shape[:-2], dtype=np.int64)) if a.ndim > 2 else 1
    out = cp.empty(a.shape[:-2] + (m, n), dtype=a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    # row-major C = A B is column-major C^T = B^T A^T: cuBLAS's (m, n, k) are (n, m, k)
    (opb, ldb, sb), (opa, lda, sa) = lb, la
    scal = ctypes.c_float if a.dtype == np.float32 else ctypes.c_double
    one, zero = scal(1.0), scal(0.0)
    fn = _lib().cublasSgemmStridedBatched if a.dtype == np.float32 else \
        _lib().cublasDgemmStridedBatched
    handle = _handle(cp).on(cp.cuda.get_current_stream().ptr)
    _check(fn(handle, opb, opa, n, m, k, ctypes.byref(one), ctypes.c_void_p(b.data.ptr), ldb,
              sb, ctypes.c_void_p(a.data.ptr), lda, sa, ctypes.byref(zero),
              ctypes.c_void_p(out.data.ptr), n, m * n, batch), "gemmStridedBatched")
    return out


def _capturing(cp) -> bool:  # pragma: no cover - GPU
    return bool(cp.cuda.get_current_stream().is_capturing())


def _refuse(a, b):  # pragma: no cover - GPU
    raise CublasError(f"a product of {a.dtype} {a.shape} and {b.dtype} {b.shape} cannot be "
                      "recorded (broadcast batch axes or a type other than float32/float64)")

"""float32 <-> bfloat16 conversion of numpy arrays, as torch's (round to nearest even).

ml_dtypes' ``astype`` runs one generic cast per element: 0.9 ms for a 1024x1024 float32 to
bfloat16 where torch takes 0.11 ms. Autocast rounds every matmul operand and result (and
their gradients), so each bf16 layer paid a few of these. Here the conversions are bit
operations on the float32 pattern, one pass (numba), with the ``astype`` reference twin:

- to bfloat16: ``(u + 0x7fff + ((u >> 16) & 1)) >> 16`` (ties to even, overflow to inf as
  torch's ``round_to_nearest_even``), NaN kept NaN with its sign (the quiet bit set);
- to float32: the 16 bits shifted up (exact).

:func:`cast` takes the fast path for C-contiguous numpy arrays of >= ``MIN`` elements and is
``a.astype(dtype)`` otherwise (the results are the same bits).
"""

from __future__ import annotations

import functools

import numpy as np

from skiff.kernels.backend import custom_op, numba_available
from skiff.kernels.backend.split import split_rows

MIN = 4096  # below this, ml_dtypes' astype (no dispatch) is as fast

F32 = np.dtype(np.float32)


@functools.lru_cache(maxsize=1)
def bf16():
    """ml_dtypes' bfloat16 (jax's dtype), imported when first asked for: a training start
    that never meets bfloat16 does not load ml_dtypes (~0.6 s, tests/test_import_cost_r27)."""
    try:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    except Exception:  # pragma: no cover - ml_dtypes is a dependency
        return None


def _is_bf16(dtype) -> bool:
    """Whether ``dtype`` is bfloat16, without importing ml_dtypes to ask."""
    return getattr(dtype, "name", None) == "bfloat16" and dtype == bf16()


@custom_op("train.f32_to_bf16")
def f32_to_bf16(a):
    """float32 array -> bfloat16 array (round to nearest even)."""
    return a.astype(bf16())


@custom_op("train.bf16_to_f32")
def bf16_to_f32(a):
    """bfloat16 array -> float32 array (exact)."""
    return a.astype(F32)


@functools.lru_cache(maxsize=1)
def _kernels():
    import numba

    # plain ``range(n)`` loops over slices: LLVM vectorizes them (a ``range(lo, hi)`` loop
    # with a select was 10x slower); NaNs are mended in a second, read-mostly pass
    @numba.njit(cache=True, nogil=True)
    def down(u, out):  # pragma: no cover - compiled
        n = u.size
        for i in range(n):
            x = u[i]
            out[i] = np.uint16((x + np.uint32(0x7FFF) + ((x >> np.uint32(16)) & np.uint32(1)))
                               >> np.uint32(16))
        for i in range(n):
            x = u[i]
            if (x & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000):  # NaN: keep it NaN
                out[i] = np.uint16((x >> np.uint32(16)) | np.uint32(0x40))

    @numba.njit(cache=True, nogil=True)
    def up(h, out):  # pragma: no cover - compiled
        for i in range(h.size):
            out[i] = np.uint32(h[i]) << np.uint32(16)

    return down, up


@f32_to_bf16.implement("cpu", "numba", available=numba_available)
def _down_numba(a):
    if not (isinstance(a, np.ndarray) and a.dtype == F32 and a.flags.c_contiguous):
        return f32_to_bf16.reference(a)
    u = a.reshape(-1).view(np.uint32)
    out = np.empty(u.shape, dtype=np.uint16)
    k = _kernels()[0]
    split_rows(lambda lo, hi: k(u[lo:hi], out[lo:hi]), u.size, u.size)
    return out.view(bf16()).reshape(a.shape)


@bf16_to_f32.implement("cpu", "numba", available=numba_available)
def _up_numba(a):
    if not (isinstance(a, np.ndarray) and _is_bf16(a.dtype) and a.flags.c_contiguous):
        return bf16_to_f32.reference(a)
    h = a.reshape(-1).view(np.uint16)
    out = np.empty(h.shape, dtype=np.uint32)
    k = _kernels()[1]
    split_rows(lambda lo, hi: k(h[lo:hi], out[lo:hi]), h.size, h.size)
    return out.view(F32).reshape(a.shape)


def cast(a, dtype):
    """``a.astype(dtype)``, the float32 <-> bfloat16 pairs of big numpy arrays in one pass."""
    dt = np.dtype(dtype)
    src = getattr(a, "dtype", None)
    if type(a) is np.ndarray and a.size >= MIN and a.flags.c_contiguous:
        if src == F32 and _is_bf16(dt):
            return f32_to_bf16(a)
        if _is_bf16(src) and dt == F32:
            return bf16_to_f32(a)
    return a.astype(dt)

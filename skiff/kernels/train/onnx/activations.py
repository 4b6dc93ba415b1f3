"""The activations the PP-OCR exporters write out op by op, as custom ops with a plain-``xp``
reference twin: the reference makes several passes over memory each way, the numba loop one
(elementwise over the arrays' own memory order, so a channels-first conv output is read as
it lies).

* ``onnx.affine_hswish_fwd(x, a, b, c, d) -> (y, z)``: PP-OCRv4's ``c * hswish(a * x + b) + d``
  with ``z = a * x + b`` kept for backward; ``onnx.affine_hswish_bwd(g, z, scale) -> gx``
  with ``scale = a * c``;
* ``onnx.gelu_erf_fwd(x) -> y`` and ``onnx.gelu_erf_bwd(g, x) -> gx``: PP-OCRv6's exact GELU
  ``x * (erf(x / sqrt 2) + 1) / 2`` (the numba twin in float32: Abramowitz & Stegun's erf,
  whose exp the derivative shares, within 1.5e-7 of scipy's, which the reference uses; the
  exp written out as exponent bits and a polynomial, so the loop runs in SIMD lanes: 2.7x
  faster forward than with ``math.exp``; a loop over ``math.erf`` is kept for float64).

The numba loops release the GIL and run over pieces of the arrays on the elementwise threads
(``skiff.kernels.backend.split``), the pieces cut on the loops' blocks. Under fastmath the
vectorised loops round the last bit of some elements by the arrays' alignment (two calls
on fresh arrays may differ by 1 ulp), so pieces agree with one call to that ulp.
"""

from __future__ import annotations

import functools

import numpy as np

from skiff.kernels.backend import custom_op, numba_available
from skiff.kernels.backend.split import split_range

from ..core.autograd import xp_of

__all__ = ["affine_hswish_fwd", "affine_hswish_bwd", "gelu_erf_fwd", "gelu_erf_bwd"]

# the GELU loops' block, and where the split cuts every loop (a multiple of any SIMD stride)
BLOCK = 512
_SQRT1_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


@custom_op("onnx.affine_hswish_fwd")
def affine_hswish_fwd(x, a, b, c, d):
    xp = xp_of(x)
    dt = x.dtype.type
    z = x * dt(a)
    z += dt(b)
    y = xp.clip(z + dt(3.0), 0, 6)
    y *= z
    y *= dt(c / 6.0)
    y += dt(d)
    return y, z


@custom_op("onnx.affine_hswish_bwd")
def affine_hswish_bwd(g, z, scale):
    xp = xp_of(z)
    dt = z.dtype.type
    # d/dz: 0 at or below -3, z / 3 + 0.5 between (negative below -1.5), 1 from 3 up
    dz = z * dt(1.0 / 3.0)
    dz += dt(0.5)
    dz *= z > -3.0
    dz = xp.where(z >= 3.0, dt(1.0), dz)
    dz *= g
    dz *= dt(scale)
    return dz


def _erf(x):
    if isinstance(x, np.ndarray):
        from scipy.special import erf
    else:  # pragma: no cover - cupy
        from cupyx.scipy.special import erf
    return erf(x).astype(x.dtype, copy=False)


@custom_op("onnx.gelu_erf_fwd")
def gelu_erf_fwd(x):
    dt = x.dtype.type
    y = _erf(x * dt(_SQRT1_2))
    y += dt(1.0)
    y *= x
    y *= dt(0.5)
    return y


@custom_op("onnx.gelu_erf_bwd")
def gelu_erf_bwd(g, x):
    xp = xp_of(x)
    dt = x.dtype.type
    cdf = _erf(x * dt(_SQRT1_2))
    cdf += dt(1.0)
    cdf *= dt(0.5)
    pdf = xp.exp(x * x * dt(-0.5))
    pdf *= x
    pdf *= dt(_INV_SQRT_2PI)
    cdf += pdf
    cdf *= g
    return cdf


@functools.lru_cache(maxsize=1)
def _gelu_kernels():
    import math

    import numba

    global _gauss_block, _tail
    f32, i32 = np.float32, np.int32
    block = BLOCK

    @numba.njit(cache=True, fastmath=True, error_model="numpy", inline="always")
    def _gauss_block(x, s, m, ebuf, kbuf):  # pragma: no cover - compiled
        # exp(-v^2 / 2) for x[s:s+m] into ebuf, with no call in the loop so that it runs
        # in SIMD lanes (numba has no vector exp here): 2^k by building the float's exponent
        # bits in kbuf (int32), exp(r) for |r| <= ln2 / 2 by its Taylor series to r^6
        # (relative error < 2e-7); the argument is clamped at -87 (the smallest normal
        # float32), so no denormals reach the arithmetic
        for i in range(m):
            v = x[s + i]
            a = max(f32(-0.5) * v * v, f32(-87.0))
            k = i32(a * f32(1.4426950408889634) - f32(0.5))
            r = a - f32(k) * f32(0.693145751953125) - f32(k) * f32(1.428606765330187e-06)
            ebuf[i] = f32(1.0) + r * (f32(1.0) + r * (f32(0.5) + r * (f32(1.0 / 6) + r * (
                f32(1.0 / 24) + r * (f32(1.0 / 120) + r * f32(1.0 / 720))))))
            kbuf[i] = (k + i32(127)) << i32(23)
        scale = kbuf.view(np.float32)
        for i in range(m):
            ebuf[i] *= scale[i]

    @numba.njit(cache=True, fastmath=True, error_model="numpy", inline="always")
    def _tail(v, e):  # pragma: no cover - compiled
        # Phi(v) by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float32's step at
        # 1), whose exp(-v^2 / 2) is the density's too: one exp per element, no erf call
        t = f32(1.0) / (f32(1.0) + f32(0.3275911 * 0.7071067811865476) * abs(v))
        q = f32(0.5) * e * t * (f32(0.254829592) + t * (f32(-0.284496736) + t * (
            f32(1.421413741) + t * (f32(-1.453152027) + t * f32(1.061405429)))))
        return f32(1.0) - q if v >= 0 else q

    @numba.njit(cache=True, fastmath=True, error_model="numpy", nogil=True)
    def fwd32(x, y):  # pragma: no cover - compiled
        ebuf, kbuf = np.empty(block, np.float32), np.empty(block, np.int32)
        for s in range(0, x.size, block):
            m = min(block, x.size - s)
            _gauss_block(x, s, m, ebuf, kbuf)
            for i in range(m):
                v = x[s + i]
                y[s + i] = v * _tail(v, ebuf[i])

    @numba.njit(cache=True, fastmath=True, error_model="numpy", nogil=True)
    def bwd32(g, x, out):  # pragma: no cover - compiled
        ebuf, kbuf = np.empty(block, np.float32), np.empty(block, np.int32)
        for s in range(0, x.size, block):
            m = min(block, x.size - s)
            _gauss_block(x, s, m, ebuf, kbuf)
            for i in range(m):
                v, e = x[s + i], ebuf[i]
                out[s + i] = g[s + i] * (_tail(v, e) + v * f32(0.3989422804014327) * e)

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def fwd64(x, y):  # pragma: no cover - compiled
        for i in range(x.size):
            v = x[i]
            y[i] = 0.5 * v * (1.0 + math.erf(v * 0.7071067811865476))

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def bwd64(g, x, out):  # pragma: no cover - compiled
        for i in range(x.size):
            v = x[i]
            cdf = 0.5 * (1.0 + math.erf(v * 0.7071067811865476))
            out[i] = g[i] * (cdf + v * 0.3989422804014327 * math.exp(-0.5 * v * v))

    return {np.dtype(np.float32): (fwd32, bwd32), np.dtype(np.float64): (fwd64, bwd64)}


def _split(kernel, arrays):
    """``kernel(*pieces_of_arrays)`` over pieces of the flat arrays on the elementwise
    threads (skiff.kernels.backend.split), cut on BLOCK."""
    split_range(lambda lo, hi: kernel(*(a[lo:hi] for a in arrays)), arrays[0].size,
                align=BLOCK)


@functools.lru_cache(maxsize=1)
def _kernels():
    import numba

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def fwd(x, a, b, c6, d, y, z):  # pragma: no cover - compiled
        for i in range(x.size):
            t = x[i] * a + b
            z[i] = t
            s = t + 3.0
            s = 0.0 if s < 0.0 else (6.0 if s > 6.0 else s)
            y[i] = t * s * c6 + d

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def bwd(g, z, scale, out):  # pragma: no cover - compiled
        for i in range(z.size):
            t = z[i]
            if t <= -3.0:
                out[i] = 0.0
            elif t >= 3.0:
                out[i] = g[i] * scale
            else:
                out[i] = g[i] * (t * (1.0 / 3.0) + 0.5) * scale

    return fwd, bwd


def _flat(a):
    """A 1-D view of ``a`` in its memory order, or None when it has none (a strided view)."""
    r = a.ravel(order="K")
    return r if np.shares_memory(r, a) or a.size == 0 else None


@affine_hswish_fwd.implement("cpu", "numba", available=numba_available)
def _fwd_numba(x, a, b, c, d):
    fx = _flat(x) if x.dtype in (np.float32, np.float64) else None
    if fx is None:
        return affine_hswish_fwd.reference(x, a, b, c, d)
    y, z = np.empty_like(x), np.empty_like(x)  # same memory order as x
    dt = x.dtype.type
    fy, fz, fwd = y.ravel(order="K"), z.ravel(order="K"), _kernels()[0]
    split_range(lambda lo, hi: fwd(fx[lo:hi], dt(a), dt(b), dt(c / 6.0), dt(d), fy[lo:hi],
                                   fz[lo:hi]), fx.size, align=BLOCK)
    return y, z


@affine_hswish_bwd.implement("cpu", "numba", available=numba_available)
def _bwd_numba(g, z, scale):
    if g.strides != z.strides or g.dtype != z.dtype:
        g = np.ascontiguousarray(g) if z.flags.c_contiguous else g
    fz, fg = _flat(z), _flat(g)
    if fz is None or fg is None or g.strides != z.strides or \
            z.dtype not in (np.float32, np.float64) or g.dtype != z.dtype:
        return affine_hswish_bwd.reference(g, z, scale)
    out = np.empty_like(z)
    fo, bwd, sc = out.ravel(order="K"), _kernels()[1], z.dtype.type(scale)
    split_range(lambda lo, hi: bwd(fg[lo:hi], fz[lo:hi], sc, fo[lo:hi]), fz.size,
                align=BLOCK)
    return out


@gelu_erf_fwd.implement("cpu", "numba", available=numba_available)
def _gelu_fwd_numba(x):
    fx = _flat(x) if x.dtype in (np.float32, np.float64) else None
    if fx is None:
        return gelu_erf_fwd.reference(x)
    y = np.empty_like(x)
    _split(_gelu_kernels()[x.dtype][0], (fx, y.ravel(order="K")))
    return y


@gelu_erf_bwd.implement("cpu", "numba", available=numba_available)
def _gelu_bwd_numba(g, x):
    if g.strides != x.strides and x.flags.c_contiguous:
        g = np.ascontiguousarray(g)
    fx, fg = _flat(x), _flat(g)
    if fx is None or fg is None or g.strides != x.strides or g.dtype != x.dtype or \
            x.dtype not in (np.float32, np.float64):
        return gelu_erf_bwd.reference(g, x)
    out = np.empty_like(x)
    _split(_gelu_kernels()[x.dtype][1], (fg, fx, out.ravel(order="K")))
    return out

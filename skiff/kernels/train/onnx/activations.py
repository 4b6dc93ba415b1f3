"""PP-OCRv4's affine hard swish, ``y = c * hswish(a * x + b) + d``, as custom ops with a
plain-``xp`` reference twin: the reference makes about six passes over memory each way, the
numba loop one (elementwise over the arrays' own memory order, so a channels-first conv
output is read as it lies).

* ``onnx.affine_hswish_fwd(x, a, b, c, d) -> (y, z)`` with ``z = a * x + b`` kept for backward;
* ``onnx.affine_hswish_bwd(g, z, scale) -> gx`` with ``scale = a * c``.
"""

from __future__ import annotations

import functools

import numpy as np

from skiff.kernels.backend import custom_op, numba_available

from ..core.autograd import xp_of

__all__ = ["affine_hswish_fwd", "affine_hswish_bwd"]


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


@functools.lru_cache(maxsize=1)
def _kernels():
    import numba

    @numba.njit(cache=True, fastmath=True)
    def fwd(x, a, b, c6, d, y, z):  # pragma: no cover - compiled
        for i in range(x.size):
            t = x[i] * a + b
            z[i] = t
            s = t + 3.0
            s = 0.0 if s < 0.0 else (6.0 if s > 6.0 else s)
            y[i] = t * s * c6 + d

    @numba.njit(cache=True, fastmath=True)
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
    _kernels()[0](fx, dt(a), dt(b), dt(c / 6.0), dt(d), y.ravel(order="K"), z.ravel(order="K"))
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
    _kernels()[1](fg, fz, z.dtype.type(scale), out.ravel(order="K"))
    return out

"""Periodic (wrap-around) axes of grid stencils: the coupling between a grid's first and last
cell along an axis, added to what the fused kernels compute.

The fused kernels (numpy reference, numba and CUDA twins) read a cell's neighbours inside the
grid only; a periodic stencil keeps the wrap coupling ``w`` in both boundary faces, so its
diagonal is already right, and the missing off-diagonal part is a correction on the two end
slabs of each periodic axis (``O(n^(2/3))`` of work, in any array module)::

    (A u)[0]   = fused(u)[0]   - w * u[n-1]
    (A u)[n-1] = fused(u)[n-1] - w * u[0]

A smoother or a fused residual takes the wrap part through its right-hand side
(:func:`wrap_rhs`: ``f + W u``): exact for the residual, lagged by one half sweep at the seam for
red-black Gauss-Seidel (with an even size the two end cells have different colours).

>>> import numpy as np
>>> from skiff.kernels.solve.stencil import ConstStencil
>>> s = ConstStencil((1, 1, 4), (0.0, 0.0, 1.0), (0.0, 0.0, 1.0), (0.0, 0.0, 1.0),
...                  (False, False, True))
>>> s.to_csr().toarray()[0].tolist()
[2.0, -1.0, 0.0, -1.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["wraps", "wrap_add", "wrap_rhs", "wrap_dot"]


def wraps(stencil, xp=np) -> list[tuple[int, object]]:
    """``(axis, coupling)`` per periodic axis: a number (uniform stencil) or the face slab
    (the other two axes' shape) on the device; empty when no axis is periodic."""
    out = []
    for ax, per in enumerate(getattr(stencil, "periodic", (False,) * 3)):
        if not per or stencil.shape[ax] < 2:
            continue
        if hasattr(stencil, "c0"):
            c = (stencil.c0, stencil.c1, stencil.c2)[ax]
            out.append((ax, xp.asarray(np.ascontiguousarray(c[_ends(ax)[0]]))))
        else:
            out.append((ax, float(stencil.a[ax])))
    return out


def _ends(ax: int):
    """Index tuples of the first and the last slab along ``ax`` (other axes in order)."""
    lo = [slice(None)] * 3
    hi = [slice(None)] * 3
    lo[ax], hi[ax] = 0, -1
    return tuple(lo), tuple(hi)


def wrap_add(u, out, ws, sign=-1.0):
    """``out += sign * W u``: the wrap neighbours' terms of each periodic axis, in place."""
    for ax, w in ws:
        lo, hi = _ends(ax)
        out[lo] += sign * (w * u[hi])
        out[hi] += sign * (w * u[lo])
    return out


def wrap_rhs(f, u, ws, buf):
    """``f + W u`` in ``buf`` (the right-hand side that makes a non-wrapping smoother or fused
    residual act as the periodic operator); ``f`` itself when nothing wraps."""
    if not ws:
        return f
    buf[...] = f
    return wrap_add(u, buf, ws, 1.0)


def wrap_dot(u, ws) -> float:
    """``u . W u`` (what the wrap terms add to ``u . A u`` with a minus sign)."""
    total = 0.0
    for ax, w in ws:
        lo, hi = _ends(ax)
        total += 2.0 * float((w * u[lo] * u[hi]).sum())
    return total

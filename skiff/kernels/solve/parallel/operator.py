"""One rank's block of one grid level: the stencil on a padded block and the multigrid pieces
that act on it (apply, red-black Gauss-Seidel, residual, restriction, interpolation).

A block keeps its vectors padded by one ghost cell on each side of every axis longer than one
cell (``pad``), so the fused stencil kernels of the serial solver run unchanged on the padded
array: after a halo exchange the interior rows are exact, the ghost rows are ignored. The
coefficients of the block are cut from the global stencil with that same padding (faces
between a ghost and an interior cell are the real faces); outside the grid they are zero and
the ghost values are zero, so a Dirichlet or Neumann side acts only through the diagonal, as
in the serial code. Masked cells (identity rows) and Dirichlet bodies (``extra`` on the
diagonal) need nothing more.

Everything is the serial algorithm, split: the smoother colours cells by their global parity
(so red-black Gauss-Seidel on N ranks is the serial sweep), the transpose restriction and the
trilinear interpolation read a ghost ``sign * edge`` at the grid's sides exactly where the
serial ``_interp_axis`` does.

Layout: ``shape3`` (the global 3D grid), ``lo``/``m`` (first cell and cells of the block per
axis), ``P = m + 2 pad`` (padded), ``inner`` (the slices of the interior in a padded array).
"""

from __future__ import annotations

import numpy as np

from .. import fused
from ..multigrid import resolve_op
from ..stencil import ConstStencil
from .halo import Halo

__all__ = ["BlockLevel", "take_block", "pad_with_signs"]


def take_block(a, starts, sizes, fill: float = 0.0) -> np.ndarray:
    """``a[starts : starts + sizes]`` per axis (host numpy), ``fill`` where out of range."""
    out = np.full(tuple(int(s) for s in sizes), fill, dtype=np.float64)
    src, dst = [], []
    for s, n, total in zip(starts, sizes, a.shape):
        lo, hi = max(int(s), 0), min(int(s) + int(n), total)
        if hi <= lo:
            return out
        src.append(slice(lo, hi))
        dst.append(slice(lo - s, hi - s))
    out[tuple(dst)] = a[tuple(src)]
    return out


def pad_with_signs(u, signs, pad):
    """``u`` with one ghost layer on the axes where ``pad`` is 1, the ghost being
    ``sign * edge`` (what the serial interpolation assumes beyond each side)."""
    xp = np if isinstance(u, np.ndarray) else __import__("cupy")
    for ax in range(3):
        if not pad[ax]:
            continue
        v = xp.moveaxis(u, ax, 0)
        u = xp.moveaxis(xp.concatenate([float(signs[2 * ax]) * v[:1], v,
                                        float(signs[2 * ax + 1]) * v[-1:]]), 0, ax)
    return u


def _shift(inner, ax, step):
    sl = list(inner)
    sl[ax] = slice(inner[ax].start + step, inner[ax].stop + step)
    return tuple(sl)


class BlockLevel:
    """The block of ``rank`` of one level: padded coefficients, work vectors, halo."""

    def __init__(self, stencil, dec, rank: int, signs, comm, xp=np):
        self.dec, self.rank, self.xp = dec, rank, xp
        self.shape3 = dec.shape3
        blk = dec.block(rank)
        self.lo = tuple(b[0] for b in blk)
        self.m = tuple(b[1] - b[0] for b in blk)
        self.pad = tuple(1 if n > 1 else 0 for n in self.shape3)
        self.P = tuple(m + 2 * p for m, p in zip(self.m, self.pad))
        self.inner = tuple(slice(p, p + m) for p, m in zip(self.pad, self.m))
        self.const = isinstance(stencil, ConstStencil)
        start = [lo - p for lo, p in zip(self.lo, self.pad)]
        if self.const:
            ds = [take_block(stencil.d[ax], [start[ax]], [self.P[ax]]) for ax in range(3)]
            self.a = [float(v) for v in stencil.a]
            self.arrays = (xp.asarray(stencil.a3),) + tuple(xp.asarray(d) for d in ds)
            diag = fused.const_diag(*[d[p:p + m] for d, p, m in zip(ds, self.pad, self.m)])
        else:
            faces = []
            for ax, c in enumerate((stencil.c0, stencil.c1, stencil.c2)):
                size = list(self.P)
                size[ax] += 1
                faces.append(xp.asarray(take_block(c, start, size)))
            diag_p = take_block(stencil.diag, start, self.P, fill=1.0)
            self.faces = faces
            self.arrays = tuple(faces) + (xp.asarray(diag_p),)
            diag = diag_p[self.inner]
        self.invdiag = xp.asarray(1.0 / np.ascontiguousarray(diag))
        self.invdiag_p = xp.ones(self.P)
        self.invdiag_p[self.inner] = self.invdiag
        grids = np.meshgrid(*[np.arange(lo, lo + m) for lo, m in zip(self.lo, self.m)],
                            indexing="ij")
        parity = sum(grids) % 2
        self.colour = [xp.asarray(parity == c) for c in (0, 1)]
        self.halo = Halo(comm, self.P, self.pad, dec.neighbours(rank), signs, xp)
        self.u = xp.zeros(self.P)
        self.f = xp.zeros(self.m)
        self.r = xp.zeros(self.P)
        self.tmp = xp.zeros(self.P)
        self._apply = resolve_op(fused.apply_const if self.const else fused.apply_var, xp)

    @property
    def cells(self) -> int:
        return int(np.prod(self.m))

    def zeros(self):
        return self.xp.zeros(self.P)

    # ------------------------------------------------------------------ the operator
    def apply(self, u, out):
        """out[inner] = (A u)[inner]: exchange u's ghosts, then the serial fused kernel on the
        padded block."""
        self.halo.exchange(u, "zero")
        self._apply(u, *self.arrays, out)
        return out

    def local_dot(self, a, b) -> float:
        return float((a[self.inner] * b[self.inner]).sum())

    def neighbour_sum(self, u):
        """Sum over the faces of each interior cell of coupling * neighbour (ghosts current)."""
        s = self.xp.zeros(self.m)
        for ax in range(3):
            if self.shape3[ax] == 1:
                continue
            below, above = u[_shift(self.inner, ax, -1)], u[_shift(self.inner, ax, 1)]
            if self.const:
                s += self.a[ax] * (below + above)
            else:
                c = self.faces[ax]
                s += c[self.inner] * below + c[_shift(self.inner, ax, 1)] * above
        return s

    def rbgs(self, u, f, sweeps: int, reverse: bool = False):
        """``sweeps`` red-black Gauss-Seidel sweeps on A u = f (cells coloured by their global
        parity, colour 0 first unless ``reverse``), one halo exchange per colour."""
        order = (1, 0) if reverse else (0, 1)
        ui = u[self.inner]
        for _ in range(int(sweeps)):
            for colour in order:
                self.halo.exchange(u, "zero")
                new = (f + self.neighbour_sum(u)) * self.invdiag
                self.xp.copyto(ui, new, where=self.colour[colour])
        return u

    def residual(self, u, f, r) -> float:
        """r[inner] = f - A u; returns this block's |r|^2."""
        self.apply(u, self.tmp)
        ri = r[self.inner]
        self.xp.subtract(f, self.tmp[self.inner], out=ri)
        return float((ri * ri).sum())

    # ------------------------------------------------------------------ grid transfers
    def restrict_mean(self, r, fc):
        """fc = mean of the children of each coarse cell (local: blocks halve)."""
        fc[...] = fused.restrict_mean(self.xp.ascontiguousarray(r[self.inner]), fc.shape)
        return fc

    def restrict_transpose(self, r, fc, factors):
        """fc = P^T r / 2^d (the transpose of :meth:`prolong`); exchanges r's ghosts."""
        self.halo.exchange(r, "signs")
        e = r
        xp = self.xp
        for ax in range(3):
            if factors[ax] == 2:
                v = xp.moveaxis(e, ax, 0)
                out = 0.75 * (v[1:-1:2] + v[2:-1:2]) + 0.25 * (v[0:-2:2] + v[3::2])
                e = xp.moveaxis(0.5 * out, 0, ax)
            elif self.pad[ax]:
                e = xp.moveaxis(xp.moveaxis(e, ax, 0)[1:-1], 0, ax)
        fc[...] = e
        return fc

    def prolong(self, u, ec_padded, factors):
        """u[inner] += P ec (cell-centred trilinear) from the coarse block with its ghosts."""
        e = ec_padded
        xp = self.xp
        for ax in range(3):
            if factors[ax] == 2:
                v = xp.moveaxis(e, ax, 0)
                mid = 0.75 * v[1:-1]
                out = xp.empty((2 * mid.shape[0],) + mid.shape[1:])
                out[0::2] = mid + 0.25 * v[:-2]
                out[1::2] = mid + 0.25 * v[2:]
                e = xp.moveaxis(out, 0, ax)
            elif self.pad[ax]:
                e = xp.moveaxis(xp.moveaxis(e, ax, 0)[1:-1], 0, ax)
        u[self.inner] += e
        return u

    def inject(self, u, ec, factors):
        """u[inner] += P0 ec (every child takes its parent's value)."""
        e = ec
        for ax in range(3):
            if factors[ax] == 2:
                e = self.xp.repeat(e, 2, axis=ax)
        u[self.inner] += e
        return u

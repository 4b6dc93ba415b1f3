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

import functools

import numpy as np

from skiff.kernels.backend import custom_op, get_array_module, numba_available

from .. import fused
from ..multigrid import resolve_op
from ..stencil import ConstStencil
from .halo import Halo

__all__ = ["BlockLevel", "take_block", "pad_with_signs", "block_colour_const",
           "block_colour_var"]


@functools.lru_cache(maxsize=1)
def _nb():
    from . import _numba_block

    return _numba_block


def _padded_inner(u, p0):
    return (slice(p0, u.shape[0] - p0), slice(1, u.shape[1] - 1), slice(1, u.shape[2] - 1))


def _moved(sl, ax, step):
    sl = list(sl)
    sl[ax] = slice(sl[ax].start + step, sl[ax].stop + step)
    return tuple(sl)


def _recolour(u, f, new, par, colour):
    """u's interior takes ``new`` on the cells of ``colour`` (global parity)."""
    xp = get_array_module(u)
    k, j, i = (xp.arange(n).reshape([n if b == a else 1 for b in range(3)])
               for a, n in enumerate(f.shape))
    mask = (par + k + j + i) % 2 == colour
    xp.copyto(u[_padded_inner(u, 1 if u.shape[0] > f.shape[0] else 0)], new, where=mask)
    return u


@custom_op("solve.block_colour_const")
def block_colour_const(u, f, a3, invdiag, p0, par, colour):
    """One colour of red-black Gauss-Seidel on a padded block with uniform couplings ``a3``:
    the interior cells whose global parity is ``colour`` take (f + neighbours) / diag."""
    inner = _padded_inner(u, p0)
    s = 0.0
    for ax in range(3):
        if ax > 0 or p0:
            s = s + float(a3[ax]) * (u[_moved(inner, ax, -1)] + u[_moved(inner, ax, 1)])
    return _recolour(u, f, (f + s) * invdiag, par, colour)


@custom_op("solve.block_colour_var")
def block_colour_var(u, f, c0, c1, c2, invdiag, p0, par, colour):
    """The same with face couplings ``c0, c1, c2`` on the padded block (face k of an axis
    lies below padded cell k)."""
    inner = _padded_inner(u, p0)
    s = 0.0
    for ax, c in enumerate((c0, c1, c2)):
        if ax > 0 or p0:
            s = s + c[inner] * u[_moved(inner, ax, -1)] + \
                c[_moved(inner, ax, 1)] * u[_moved(inner, ax, 1)]
    return _recolour(u, f, (f + s) * invdiag, par, colour)


@block_colour_const.implement("cpu", "numba", available=numba_available)
def _colour_const_nb(u, f, a3, invdiag, p0, par, colour):
    _nb().colour_const(u, f, a3, invdiag, int(p0), int(par), int(colour))
    return u


@block_colour_var.implement("cpu", "numba", available=numba_available)
def _colour_var_nb(u, f, c0, c1, c2, invdiag, p0, par, colour):
    _nb().colour_var(u, f, c0, c1, c2, invdiag, int(p0), int(par), int(colour))
    return u


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
        self.par = sum(self.lo) % 2
        self.coef = (self.arrays[0],) if self.const else tuple(self.arrays[:3])
        self._colour = resolve_op(block_colour_const if self.const else block_colour_var, xp)
        self._prolong = resolve_op(fused.prolong_add, xp)
        self._restrict_t = resolve_op(fused.restrict_t, xp)
        self.signs = xp.asarray(np.asarray(signs, dtype=np.float64))
        self._work = {}
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
    def apply(self, u, out, clean: bool = False):
        """out[inner] = (A u)[inner]: exchange u's ghosts, then the serial fused kernel on the
        padded block; ``clean``: zero out's ghost layer (so that sums over the whole padded
        array are sums over the block)."""
        self.halo.exchange(u, "zero")
        self._apply(u, *self.arrays, out)
        if clean:
            for ax in range(3):
                if self.pad[ax]:
                    v = self.xp.moveaxis(out, ax, 0)
                    v[0] = 0.0
                    v[-1] = 0.0
        return out

    def local_dot(self, a, b) -> float:
        return float((a[self.inner] * b[self.inner]).sum())

    def rbgs(self, u, f, sweeps: int, reverse: bool = False):
        """``sweeps`` red-black Gauss-Seidel sweeps on A u = f (cells coloured by their global
        parity, colour 0 first unless ``reverse``), one halo exchange per colour."""
        order = (1, 0) if reverse else (0, 1)
        for _ in range(int(sweeps)):
            for colour in order:
                self.halo.exchange(u, "zero")
                self._colour(u, f, *self.coef, self.invdiag, self.pad[0], self.par, colour)
        return u

    def residual(self, u, f, r, norm: bool = True) -> float:
        """r[inner] = f - A u; returns this block's |r|^2 (0 unless ``norm``)."""
        self.apply(u, self.tmp)
        ri = r[self.inner]
        self.xp.subtract(f, self.tmp[self.inner], out=ri)
        return float((ri * ri).sum()) if norm else 0.0

    # ------------------------------------------------------------------ grid transfers
    def restrict_mean(self, r, fc):
        """fc = mean of the children of each coarse cell (local: blocks halve)."""
        fc[...] = fused.restrict_mean(self.xp.ascontiguousarray(r[self.inner]), fc.shape)
        return fc

    def _buffer(self, name, shape):
        buf = self._work.get(name)
        if buf is None or buf.shape != tuple(shape):
            buf = self._work[name] = self.xp.zeros(shape)
        return buf

    def restrict_transpose(self, r, fc, factors):
        """fc = P^T r / 2^d (the transpose of :meth:`prolong`): r's ghosts are exchanged
        (``sign * edge`` at the grid's sides), then the serial fused kernel runs on a copy
        with a second ghost layer on the halved axes, so that the coarse blocks line up."""
        self.halo.exchange(r, "signs")
        big = [p + 2 if f == 2 else p for p, f in zip(self.P, factors)]
        rb = self._buffer("rbig", big)
        rb[tuple(slice(1, 1 + p) if f == 2 else slice(None) for p, f in zip(self.P, factors))] \
            = r
        coarse = [n // 2 if f == 2 else n for n, f in zip(big, factors)]
        fb = self._buffer("fcbig", coarse)
        self._restrict_t(rb, fb, self.signs)
        fc[...] = fb[tuple(slice(p, n - p) for p, n in zip(self.pad, coarse))]
        return fc

    def prolong(self, u, ec_padded, factors):
        """u[inner] += P ec (cell-centred trilinear) from the coarse block with its ghosts:
        the serial fused kernel onto a work block two fine cells wider on the halved axes."""
        ec = self.xp.ascontiguousarray(ec_padded)
        big = [2 * n if f == 2 else n for n, f in zip(ec.shape, factors)]
        ub = self._buffer("pbig", big)
        ub[...] = 0.0
        self._prolong(ub, ec, self.signs)
        off = [2 * p if f == 2 else p for p, f in zip(self.pad, factors)]
        u[self.inner] += ub[tuple(slice(o, o + m) for o, m in zip(off, self.m))]
        return u

    def inject(self, u, ec, factors):
        """u[inner] += P0 ec (every child takes its parent's value)."""
        e = ec
        for ax in range(3):
            if factors[ax] == 2:
                e = self.xp.repeat(e, 2, axis=ax)
        u[self.inner] += e
        return u

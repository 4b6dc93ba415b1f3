"""Distributed geometric multigrid: the serial V/W/F cycle of :mod:`..multigrid` with the fine
levels split over the ranks and the coarse levels gathered.

The hierarchy is the serial one, level for level (same coarsening, same coarse operators, same
coarsest inverse), so a cycle on N ranks is the serial cycle up to rounding, and CG with it
takes the serial number of iterations on any number of ranks. A level is distributed while
its blocks halve with the grid and it has at least ``GATHER_CELLS_PER_RANK`` cells per rank;
the first level that is not is gathered to every rank (one Allgatherv of the restricted
residual) and cycled there by a serial :class:`~..multigrid.GeometricMG` built on that level's
stencil, each rank doing the same small work, so its correction needs no message back (each
rank cuts its block, ghosts included, from the gathered answer).
"""

from __future__ import annotations

import math

import numpy as np

from ..multigrid import CYCLES, GeometricMG
from ..stencil import ConstStencil, coarsen_factors
from .decompose import GATHER_CELLS_PER_RANK
from .operator import BlockLevel, pad_with_signs

__all__ = ["DistributedMG"]


class DistributedMG:
    """Multigrid over the blocks of ``dec`` (this rank: ``comm.rank``).

    Parameters as :class:`~..multigrid.GeometricMG` (``smoother`` red-black Gauss-Seidel
    only); ``level0``: the finest :class:`BlockLevel`, shared with the Krylov operator."""

    def __init__(self, stencil, signs, dec, comm, *, cycle="V", pre=2, post=2, singular=False,
                 interpolation="auto", coarse_size=512, gather_cells=GATHER_CELLS_PER_RANK,
                 level0=None, xp=np):
        if cycle not in CYCLES:
            raise ValueError(f"unknown cycle {cycle!r}: choose from {', '.join(CYCLES)}")
        self.cycle_type, self.pre, self.post = cycle, int(pre), int(post)
        self.comm, self.xp, self.singular = comm, xp, singular
        if interpolation == "auto":
            interpolation = "linear" if isinstance(stencil, ConstStencil) else "constant"
        self.interpolation = interpolation
        self.signs = np.asarray(signs, dtype=np.float64)
        # the serial hierarchy (GeometricMG's loop), all of it known on every rank
        stencils, factors = [stencil], []
        while True:
            s = stencils[-1]
            f = coarsen_factors(s.shape, s.strengths())
            if math.prod(s.shape) <= coarse_size or f == (1, 1, 1):
                break
            factors.append(f)
            stencils.append(s.coarsen(f))
        self.factors = factors
        self.nlevels = len(stencils)
        # distributed levels: each needs its blocks and those of the next level
        decs = [dec]
        L = 0
        while L < self.nlevels - 1:
            nxt = decs[L].coarsen(factors[L])
            big = L == 0 or math.prod(stencils[L].shape) >= gather_cells * comm.size
            if nxt is None or not big:
                break
            decs.append(nxt)
            L += 1
        self.L = L
        self.decs = decs
        self.level0 = level0 if level0 is not None else BlockLevel(
            stencil, dec, comm.rank, self.signs, comm, xp)
        self.blocks = [self.level0] + [
            BlockLevel(stencils[lev], decs[lev], comm.rank, self.signs, comm, xp)
            for lev in range(1, L)]
        self.blocks = self.blocks[:L]
        self.fL = xp.zeros(self._block_shape(decs[L])) if L > 0 else None
        # the gathered levels: a serial multigrid from level L down (same settings)
        self.sub = GeometricMG(stencils[L], self.signs, cycle=cycle, smoother="rbgs", pre=pre,
                               post=post, coarse_size=coarse_size, singular=singular,
                               interpolation=interpolation, xp=xp)
        self._sym = False
        self._p0 = False

    def _block_shape(self, dec):
        return tuple(hi - lo for lo, hi in dec.block(self.comm.rank))

    def describe(self) -> str:
        shapes = [d.shape3 for d in self.decs[:self.L]] + [lv.shape for lv in self.sub.levels]
        grids = " > ".join("x".join(map(str, s[1:] if s[0] == 1 else s)) for s in shapes)
        return (f"{self.cycle_type}({self.pre},{self.post}) rbgs, {self.interpolation} "
                f"interpolation, {self.nlevels} levels ({self.L} split over "
                f"{self.comm.size} ranks, the rest gathered): {grids}")

    # ------------------------------------------------------------------ the cycle
    def _smooth(self, level, u, f, steps, reverse):
        if steps > 0:
            self.blocks[level].rbgs(u, f, steps, reverse)

    def _target(self, level):
        return self.blocks[level + 1].f if level + 1 < self.L else self.fL

    def _restrict(self, level, u, f) -> float:
        """Residual of level ``level`` restricted into the next level's right-hand side;
        returns this block's |r|^2."""
        lv = self.blocks[level]
        rr = lv.residual(u, f, lv.r, norm=level == 0 and not self._sym)  # iterate's test
        if self._sym and not self._p0:
            lv.restrict_transpose(lv.r, self._target(level), self.factors[level])
        else:
            lv.restrict_mean(lv.r, self._target(level))
        return rr

    def cycle(self, level, u, f, kind=None):
        """One cycle on A u = f at a distributed ``level`` (padded u, interior f), in place."""
        kind = kind or self.cycle_type
        self._smooth(level, u, f, self.pre, False)
        self._restrict(level, u, f)
        self._correct(level, u, f, kind)

    def _coarse(self, level, kind):
        """The next level's cycle(s) as the serial ``_correct`` makes them; returns the
        correction: padded with ghosts (trilinear) or the block alone (constant)."""
        last = level + 1 == self.nlevels - 1
        if level + 1 < self.L:
            nxt = self.blocks[level + 1]
            nxt.u[...] = 0.0
            self.cycle(level + 1, nxt.u, nxt.f, kind)
            if kind == "W" and not last:
                self.cycle(level + 1, nxt.u, nxt.f, "W")
            elif kind == "F" and not last:
                self.cycle(level + 1, nxt.u, nxt.f, "V")
            if self._p0:
                return nxt.u[nxt.inner]
            return nxt.halo.exchange(nxt.u, "signs")
        F = self.xp.asarray(self.comm.allgather_blocks(self.fL, self.decs[self.L]))
        U = self.xp.zeros(F.shape)
        sub = self.sub
        sub._sym, sub._p0, sub._rhs = self._sym, self._p0, F
        sub.cycle(0, U, F, kind)
        if kind == "W" and not last:
            sub.cycle(0, U, F, "W")
        elif kind == "F" and not last:
            sub.cycle(0, U, F, "V")
        blk = self.decs[self.L].block(self.comm.rank)
        if self._p0:
            return U[tuple(slice(lo, hi) for lo, hi in blk)]
        pad = self.blocks[level].pad
        Up = pad_with_signs(U, self.signs, pad)
        return Up[tuple(slice(lo, hi + 2 * p) for (lo, hi), p in zip(blk, pad))]

    def _correct(self, level, u, f, kind):
        lv = self.blocks[level]
        ec = self._coarse(level, kind)
        if self._p0:
            lv.inject(u, ec, self.factors[level])
        else:
            lv.prolong(u, ec, self.factors[level])
        self._smooth(level, u, f, self.post, True)

    # ------------------------------------------------------------------ as a solver part
    def precondition(self, r, out):
        """out = one symmetric cycle on ``r`` from zero (padded vectors; interiors used)."""
        out[...] = 0.0
        if self.L == 0:
            return self._gathered(r, out, lambda R, O: self.sub.precondition(R, O))
        lv = self.blocks[0]
        ri = r[lv.inner]
        self._sym, self._p0 = True, self.interpolation == "constant"
        try:
            self._smooth(0, out, ri, self.pre, False)
            self._restrict(0, out, ri)
            self._correct(0, out, ri, self.cycle_type)
        finally:
            self._sym = self._p0 = False
        return out

    def _gathered(self, r, out, fn):
        inner = self.level0.inner
        R = self.xp.asarray(self.comm.allgather_blocks(r[inner], self.decs[0]))
        O = self.xp.zeros(R.shape)
        fn(R, O)
        blk = self.decs[0].block(self.comm.rank)
        out[inner] = O[tuple(slice(lo, hi) for lo, hi in blk)]
        return out

    def iterate(self, b, u, *, tol, maxiter, callback=None):
        """Stationary cycles (the serial ``iterate``): the residual after pre-smoothing is the
        convergence test. ``b`` interior, ``u`` padded. Returns ``(u, history, converged)``."""
        hist = []
        if self.L == 0:
            inner = self.level0.inner
            B = self.xp.asarray(self.comm.allgather_blocks(b, self.decs[0]))
            U, hist, ok = self.sub.iterate(B, None, rtol=0.0, atol=tol, maxiter=maxiter,
                                           bnorm=float(np.linalg.norm(np.asarray(B).ravel())))
            blk = self.decs[0].block(self.comm.rank)
            u[inner] = U[tuple(slice(lo, hi) for lo, hi in blk)]
            if callback is not None:
                for it, h in enumerate(hist):
                    callback(it, h, u)
            return u, hist, ok
        lv = self.blocks[0]
        for it in range(int(maxiter) + 1):
            self._smooth(0, u, b, self.pre, False)
            rnorm = math.sqrt(self.comm.allreduce([self._restrict(0, u, b)])[0])
            hist.append(rnorm)
            if callback is not None:
                callback(it, rnorm, u)
            if not math.isfinite(rnorm):
                raise FloatingPointError(f"multigrid diverged: residual {rnorm} at cycle {it}")
            if rnorm <= tol or it == maxiter:
                break
            self._correct(0, u, b, self.cycle_type)
            if self.singular:
                ui = u[lv.inner]
                total = self.comm.allreduce([float(ui.sum())])[0]
                ui -= total / math.prod(self.decs[0].shape3)
        return u, hist, hist[-1] <= tol

    def cycle_bytes(self) -> float:
        """Bytes one cycle must move on this rank (for the bandwidth figure)."""
        n = sum(b.cells for b in self.blocks) + sum(int(np.prod(lv.shape))
                                                     for lv in self.sub.levels)
        return 8.0 * n * (3 * (self.pre + self.post) + 5)

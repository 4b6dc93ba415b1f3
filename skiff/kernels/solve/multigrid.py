"""Geometric multigrid for cell-centred grid stencils: V, W and F cycles, red-black Gauss-Seidel
or Chebyshev smoothing, full multigrid, and a direct solve on the coarsest grid.

Each level holds its stencil's arrays on the device and two work grids; a cycle calls the fused
kernels only (smoother sweep, residual + restriction + norm, prolongation + add), so the
finest grid is read about ``pre + post + 2`` times per cycle.

>>> from skiff.kernels.solve.problems import poisson
>>> p = poisson((64, 64))
>>> mg = GeometricMG(p.stencil, p.signs)
>>> u, hist, _ = mg.iterate(p.rhs.copy(), rtol=1e-8)
>>> bool(hist[-1] <= 1e-8 * hist[0] * 10) and len(hist) < 15
True
"""

from __future__ import annotations

import os

import numpy as np

from . import fused
from .periodic import wrap_add, wrap_dot, wrap_rhs, wraps
from .stencil import ConstStencil, VarStencil, coarsen_factors

__all__ = ["GeometricMG", "CYCLES", "SMOOTHERS", "RESTRICTIONS"]

CYCLES = ("V", "W", "F")
DENSE_COARSE = 2048      # coarsest grids up to this size get a dense inverse, larger a sparse LU
SMOOTHERS = ("rbgs", "chebyshev")
RESTRICTIONS = ("mean", "transpose")
INTERPOLATIONS = ("auto", "linear", "constant")


def inject_add(u, ec):
    """u += P0 ec: piecewise-constant interpolation (every child takes its parent's value), the
    transpose of the mean restriction times 2^d. One broadcast pass, in ``xp``."""
    (n0, n1, n2), (m0, m1, m2) = u.shape, ec.shape
    v = u.reshape(m0, n0 // m0, m1, n1 // m1, m2, n2 // m2)
    v += ec[:, None, :, None, :, None]
    return u


def resolve_op(op, xp):
    """The implementation dispatch would pick for arrays of ``xp`` (resolved once per level so
    the many small calls on coarse grids skip the per-call dispatch)."""
    if os.environ.get("SKIFF_REFERENCE_OPS"):
        return op.reference
    impls = op.available_impls("cpu" if xp is np else "gpu")
    return impls[0].fn if impls else op.reference


class _Level:
    """One grid: its stencil (arrays on the device) and the fused kernels that use it."""

    def __init__(self, stencil: ConstStencil | VarStencil, xp):
        self.stencil = stencil
        self.shape = stencil.shape
        self.xp = xp
        self.const = isinstance(stencil, ConstStencil)
        self.arrays = tuple(xp.asarray(a) for a in stencil.arrays())
        self.diag = xp.asarray(stencil.diag)
        self.invdiag = 1.0 / self.diag
        self.u = xp.zeros(self.shape)
        self.f = xp.zeros(self.shape)
        self.tmp = None
        self.lmax = None     # largest eigenvalue of D^-1 A (Chebyshev)
        self.resolve_ops()
        self.r = None
        self.wraps = wraps(stencil, xp)   # periodic axes (their terms go through f)
        self.fw = xp.empty(self.shape) if self.wraps else None

    def resolve_ops(self) -> None:
        """Pick the fused kernels for this level (again once numba has loaded)."""
        xp, c = self.xp, self.const
        self._apply = resolve_op(fused.apply_const if c else fused.apply_var, xp)
        self._rbgs = resolve_op(fused.rbgs_const if c else fused.rbgs_var, xp)
        self._rr = resolve_op(
            fused.residual_restrict_const if c else fused.residual_restrict_var, xp)
        self.prolong = resolve_op(fused.prolong_add, xp)
        self._rt = resolve_op(fused.restrict_t, xp)
        self._rrt = resolve_op(fused.residual_restrict_t_const, xp)

    def residual_restrict_t(self, u, f, fc, signs) -> float:
        """fc = P^T (f - A u) / 2^d (the symmetric restriction); returns |f - A u|^2."""
        f = wrap_rhs(f, u, self.wraps, self.fw)
        if self.const:
            return self._rrt(u, f, *self.arrays, fc, signs)[1]
        if self.r is None:
            self.r = self.xp.empty(self.shape)
        self._apply(u, *self.arrays, self.r)
        self.xp.subtract(f, self.r, out=self.r)
        return self._rt(self.r, fc, signs)[1]

    def apply(self, u, out) -> float:
        dot = self._apply(u, *self.arrays, out)[1]
        if self.wraps:
            wrap_add(u, out, self.wraps)
            dot -= wrap_dot(u, self.wraps)
        return dot

    def rbgs(self, u, f, sweeps, reverse=False):
        if not self.wraps:
            self._rbgs(u, f, *self.arrays, sweeps, reverse)
            return
        for _ in range(int(sweeps)):   # the seam's neighbours as of the sweep's start
            self._rbgs(u, wrap_rhs(f, u, self.wraps, self.fw), *self.arrays, 1, reverse)

    def residual_restrict(self, u, f, fc) -> float:
        f = wrap_rhs(f, u, self.wraps, self.fw)
        return self._rr(u, f, *self.arrays, fc)[1]

    def estimate_lmax(self, iters=12) -> float:
        xp = self.xp
        rng = np.random.default_rng(0)
        v = xp.asarray(rng.standard_normal(self.shape))
        out = xp.empty(self.shape)
        lam = 1.0
        for _ in range(iters):
            v /= float(xp.linalg.norm(v.ravel()))
            self.apply(v, out)
            w = out * self.invdiag
            lam = float((w * v).sum())
            v = w
        return min(max(lam, 0.5), 2.0) * 1.05

    def chebyshev(self, u, f, degree, lo_ratio=0.3):
        """``degree`` steps of Chebyshev smoothing on D^-1 A over [lo_ratio b, b]."""
        if self.lmax is None:
            self.lmax = self.estimate_lmax()
        if self.tmp is None:
            self.tmp = self.xp.empty(self.shape)
        b = self.lmax
        a = lo_ratio * b
        theta, delta = (b + a) / 2, (b - a) / 2
        sigma = theta / delta
        rho = 1.0 / sigma
        self.apply(u, self.tmp)
        r = (f - self.tmp) * self.invdiag
        d = r / theta
        for k in range(degree):
            u += d
            if k == degree - 1:
                break
            self.apply(d, self.tmp)
            r -= self.tmp * self.invdiag
            rho_new = 1.0 / (2 * sigma - rho)
            d = rho_new * rho * d + (2 * rho_new / delta) * r
            rho = rho_new


class GeometricMG:
    """A geometric multigrid hierarchy for a grid stencil.

    Parameters
    ----------
    stencil : ConstStencil or VarStencil
        The finest operator.
    signs : array of 6
        Ghost factors of the sides for interpolation (-1 Dirichlet, +1 Neumann).
    cycle : 'V', 'W' or 'F'
    smoother : 'rbgs' (red-black Gauss-Seidel) or 'chebyshev'
    pre, post : int
        Smoothing steps before and after the coarse correction.
    coarse_size : int
        Stop coarsening at about this many cells; that grid is solved directly.
    restriction : 'mean' or 'transpose'
        Restriction of the stationary cycles (``iterate``, ``fmg``): the mean of the children
        (fused with the residual; robust on coefficient jumps) or the scaled transpose of the
        prolongation. The preconditioner (:meth:`precondition`) always uses the transpose, so
        that with ``pre == post`` it is a symmetric positive definite operator (plain and
        pipelined CG need that).
    interpolation : 'auto', 'linear' or 'constant'
        Interpolation of the preconditioner: trilinear (with restriction P^T / 2^d) or
        piecewise constant (with the mean of the children, which is P0^T / 2^d; robust across
        coefficient jumps and bodies). 'auto': linear for uniform coefficients, constant for
        variable ones.
    singular : bool
        The operator has constants in its null space (pure Neumann): the coarse solve uses a
        pseudo-inverse and the stationary iteration removes the mean.
    xp : array module
    """

    def __init__(self, stencil, signs, *, cycle="V", smoother="rbgs", pre=2, post=2,
                 coarse_size=512, singular=False, restriction="mean", interpolation="auto", xp=np):
        if cycle not in CYCLES:
            raise ValueError(f"unknown cycle {cycle!r}: choose from {', '.join(CYCLES)}")
        if smoother not in SMOOTHERS:
            raise ValueError(f"unknown smoother {smoother!r}: choose from {', '.join(SMOOTHERS)}")
        if restriction not in RESTRICTIONS:
            raise ValueError(f"unknown restriction {restriction!r}: choose from "
                             f"{', '.join(RESTRICTIONS)}")
        self.cycle_type, self.smoother = cycle, smoother
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"unknown interpolation {interpolation!r}: choose from "
                             f"{', '.join(INTERPOLATIONS)}")
        if interpolation == "auto":
            interpolation = "linear" if isinstance(stencil, ConstStencil) else "constant"
        self.interpolation = interpolation
        self.restriction = restriction
        self._sym = restriction == "transpose"
        self._p0 = False        # piecewise-constant interpolation (inside precondition)
        self.pre, self.post = int(pre), int(post)
        self.singular = singular
        self.xp = xp
        self.signs = xp.asarray(np.asarray(signs, dtype=np.float64))
        # the numba kernels were still loading when the levels chose theirs (a small solve
        # that did not wait): switch to them at the next cycle after they are ready
        self._provisional = xp is np and not fused.numba_loaded()
        self.levels = [_Level(stencil, xp)]
        while True:
            s = self.levels[-1].stencil
            f = coarsen_factors(s.shape, s.strengths())
            if np.prod(s.shape) <= coarse_size or f == (1, 1, 1):
                break
            self.levels.append(_Level(s.coarsen(f), xp))
        A = self.levels[-1].stencil.to_csr()
        self.coarse_inv = self.coarse_lu = None
        if A.shape[0] <= DENSE_COARSE:
            dense = A.toarray()
            inv = np.linalg.pinv(dense) if singular else np.linalg.inv(dense)
            self.coarse_inv = xp.asarray(inv)
        else:
            # a grid that stops halving early (odd sizes): a sparse LU on the host; a singular
            # operator gets a tiny shift (the coarse correction only needs to be close)
            from scipy.sparse import identity
            from scipy.sparse.linalg import splu

            if singular:
                A = A + 1e-10 * float(A.diagonal().max()) * identity(A.shape[0])
            self.coarse_lu = splu(A.tocsc())

    @property
    def nlevels(self) -> int:
        return len(self.levels)

    def describe(self) -> str:
        grids = " > ".join("x".join(map(str, lv.shape[1:] if lv.shape[0] == 1 else lv.shape))
                           for lv in self.levels)
        return (f"{self.cycle_type}({self.pre},{self.post}) {self.smoother}, "
                f"{self.interpolation} interpolation, "
                f"{self.nlevels} levels: {grids}")

    # -------------------------------------------------------------------------- cycles
    def _smooth(self, lv, u, f, steps, reverse):
        if steps <= 0:
            return
        if self.smoother == "rbgs":
            lv.rbgs(u, f, steps, reverse)
        else:
            lv.chebyshev(u, f, steps + 1)

    def _coarse_solve(self, lv, u, f):
        if self.coarse_inv is not None:
            u[...] = (self.coarse_inv @ f.ravel()).reshape(u.shape)
            return
        from skiff.kernels.backend import to_numpy

        x = self.coarse_lu.solve(np.asarray(to_numpy(f), dtype=np.float64).ravel())
        u[...] = self.xp.asarray(x.reshape(u.shape))

    def cycle(self, level: int, u, f, kind: str | None = None) -> None:
        """One cycle on ``A u = f`` at ``level``, in place."""
        kind = kind or self.cycle_type
        lv = self.levels[level]
        if level == self.nlevels - 1:
            self._coarse_solve(lv, u, f)
            return
        self._smooth(lv, u, f, self.pre, False)
        self._restrict(lv, u, f, self.levels[level + 1].f)
        self._correct(level, u, kind)

    def _restrict(self, lv, u, f, fc) -> float:
        if self._sym and not self._p0:
            return lv.residual_restrict_t(u, f, fc, self.signs)
        return lv.residual_restrict(u, f, fc)

    def _correct(self, level, u, kind):
        """Coarse-grid correction (the restricted residual is already in the next level's f),
        then post-smoothing."""
        lv, nxt = self.levels[level], self.levels[level + 1]
        nxt.u[...] = 0.0
        if kind == "V":
            self.cycle(level + 1, nxt.u, nxt.f, "V")
        elif kind == "W":
            self.cycle(level + 1, nxt.u, nxt.f, "W")
            if level + 1 < self.nlevels - 1:
                self.cycle(level + 1, nxt.u, nxt.f, "W")
        else:  # F: an F-cycle then a V-cycle below
            self.cycle(level + 1, nxt.u, nxt.f, "F")
            if level + 1 < self.nlevels - 1:
                self.cycle(level + 1, nxt.u, nxt.f, "V")
        if self._p0:
            inject_add(u, nxt.u)
        else:
            lv.prolong(u, nxt.u, self.signs)
        self._smooth(lv, u, lv.f if u is lv.u else self._rhs, self.post, True)

    def _switch_to_numba(self) -> None:
        if self._provisional and fused.numba_loaded():
            for lv in self.levels:
                lv.resolve_ops()
            self._provisional = False

    def precondition(self, r, out):
        """out = one cycle applied to ``r`` from a zero guess (the preconditioner M^-1 r)."""
        self._switch_to_numba()
        out[...] = 0.0
        self._rhs = r
        lv = self.levels[0]
        if self.nlevels == 1:
            self._coarse_solve(lv, out, r)
            return out
        sym, self._sym = self._sym, True
        self._p0 = self.interpolation == "constant"
        try:
            self._smooth(lv, out, r, self.pre, False)
            self._restrict(lv, out, r, self.levels[1].f)
            self._correct(0, out, self.cycle_type)
        finally:
            self._sym, self._p0 = sym, False
        return out

    # -------------------------------------------------------------------------- solvers
    def iterate(self, b, u=None, *, rtol=1e-8, atol=0.0, maxiter=100, callback=None,
                bnorm=None):
        """Stationary multigrid: cycles until |b - A u| <= max(rtol |b|, atol).

        The residual norm comes from the fused residual + restriction of each cycle, taken
        after pre-smoothing; when it meets the tolerance that (pre-smoothed) iterate is
        returned, so the reported residual is the true residual of ``u``.
        Returns ``(u, history, converged)``.
        """
        xp = self.xp
        lv = self.levels[0]
        u = xp.zeros(lv.shape) if u is None else u
        self._rhs = b
        bnorm = float(xp.linalg.norm(b.ravel())) if bnorm is None else bnorm
        tol = max(rtol * bnorm, atol)
        hist = []
        if self.nlevels == 1:
            self._coarse_solve(lv, u, b)
            tmp = xp.empty_like(u)
            lv.apply(u, tmp)
            return u, [bnorm, float(xp.linalg.norm((b - tmp).ravel()))], True
        nxt = self.levels[1]
        for it in range(int(maxiter) + 1):
            self._switch_to_numba()
            self._smooth(lv, u, b, self.pre, False)
            rnorm = float(np.sqrt(self._restrict(lv, u, b, nxt.f)))
            hist.append(rnorm)
            if callback is not None:
                callback(it, rnorm, u)
            if not np.isfinite(rnorm):
                raise FloatingPointError(f"multigrid diverged: residual {rnorm} at cycle {it}")
            if rnorm <= tol or it == maxiter:
                break
            self._correct(0, u, self.cycle_type)
            if self.singular:
                u -= u.mean()
        return u, hist, hist[-1] <= tol

    def fmg(self, source, bterm, *, cycles=1):
        """Full multigrid: solve on the coarsest grid, interpolate, ``cycles`` cycles per level.

        ``source`` restricts by the mean of the children, the Dirichlet boundary term by half
        of it (it scales as 1/h^2, not as a volume density).
        """
        xp = self.xp
        restrict = resolve_op(fused.restrict, xp)
        src = xp.asarray(source)
        bt = xp.asarray(bterm) if bterm is not None and bool((bterm != 0).any()) else None
        fs = [src if bt is None else src + bt]
        for lv in self.levels[1:]:
            src = restrict(src, xp.empty(lv.shape))[0]
            if bt is not None:
                bt = restrict(bt, xp.empty(lv.shape))[0] * 0.5
            fs.append(src if bt is None else src + bt)
        last = self.levels[-1]
        u = xp.zeros(last.shape)
        self._coarse_solve(last, u, fs[-1])
        for level in range(self.nlevels - 2, -1, -1):
            lv = self.levels[level]
            fine = xp.zeros(lv.shape)
            lv.prolong(fine, u, self.signs)
            self._rhs = fs[level]
            for _ in range(cycles):
                self._smooth(lv, fine, fs[level], self.pre, False)
                self._restrict(lv, fine, fs[level], self.levels[level + 1].f)
                self._correct(level, fine, self.cycle_type)
            u = fine
        return u

"""Steady incompressible Navier-Stokes by Newton's method on Taylor-Hood P2/P1.

Find ``u`` in P2^2 (equal to ``g`` on the Dirichlet boundary) and ``p`` in P1 with, for all
test functions,

    nu (grad u, grad v) + ((u . grad) u, v) - (p, div v) = (f, v),     (div u, q) = 0,

the "do-nothing" condition ``nu du/dn - p n = 0`` holding weakly where no velocity is given
(the outlet). Newton's step solves the saddle-point system

    [ A + C(u) + N_xx   N_xy              -Bx^T ] [dux]     [R_x]
    [ N_yx              A + C(u) + N_yy   -By^T ] [duy] = - [R_y]
    [ -Bx               -By                0    ] [dp ]     [R_p]

with ``A = nu K``, ``C(u)`` the convection by ``u``, ``N_ab = int (d_b u_a) v_j v_i``, through
:class:`NewtonSolves`: a sparse LU (SciPy's SuperLU, the factorisation skiff's ``Solver(...,
method='direct')`` uses), kept and used as GMRES's preconditioner on the next steps'
Jacobians, which change little once Newton is near its answer; the Jacobian is factorised
again only when GMRES with the kept LU needs more than ``REFACTOR_AFTER`` iterations (a
factorisation costs ~30 LU solves on a nose's 32 000-unknown Jacobian).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from skiff.kernels.backend.report import JobCancelled, NullReporter

from ..krylov import SolveError, gmres
from .spaces import TaylorHood

__all__ = ["FlowProblem", "FlowState", "NewtonSolves", "solve_steady", "momentum_residual"]

# GMRES iterations with a kept LU above which the Jacobian is factorised again: on the nose's
# Jacobian (32 066 unknowns, 556k entries) SuperLU factorises in 0.34 s CPU, one LU solve is
# 0.011 s and a GMRES iteration with it 0.013 s
REFACTOR_AFTER = 20
# the linear solves' tolerance: |J d + R| <= LINEAR_RTOL |R| (the LU's own solve is ~1e-14):
# tight enough that Newton's steps (its record), not only its converged answers, are those of
# exact solves. An inexact Newton (Eisenstat-Walker forcing, 1e-3 early) took 4-8 GMRES
# iterations a step instead of 5-16 (the nose 4.1 s CPU instead of 4.5) but moved the
# recorded updates by 1e-4 relative
LINEAR_RTOL = 1e-10
# a GMRES solve that needed more than this share of REFACTOR_AFTER drops the LU: the next
# Jacobian is further still from the factorised one (a failed try costs REFACTOR_AFTER solves)
SLOW_FRACTION = 0.75
# a Newton update above this (relative to the velocity) moved the Jacobian too far for the
# kept LU: the next step factorises (on the nose, GMRES to 1e-10 with the LU from before an
# update of 0.69 or 0.3 did not converge in 40 iterations; after 0.2, 11; after 0.02, 6)
REUSE_BELOW = 0.25


class _Op:
    def __init__(self, A):
        self.A = A

    def matvec(self, x, out):
        out[...] = self.A @ x


class NewtonSolves:
    """Newton's linear solves for one solve: the last Jacobian's sparse LU (SuperLU, COLAMD:
    what ``spsolve`` and ``Solver(method='direct')`` do) is kept and used as the right
    preconditioner of GMRES on the next Jacobians (a Shamanskii/chord scheme that still
    solves each step's system to ``rtol``); when GMRES has not reached ``rtol`` after
    ``refactor_after`` iterations, or the Jacobian's kind changed (a Picard step before a
    Newton one), the new Jacobian is factorised, and so is the next one after two GMRES
    in a row gave up. ``reuse=False``: a factorisation every step.
    ``steps`` records each solve: ``"lu"`` or the GMRES iterations taken."""

    def __init__(self, *, reuse: bool = True, refactor_after: int = REFACTOR_AFTER,
                 rtol: float = LINEAR_RTOL):
        self.reuse, self.refactor_after, self.rtol = bool(reuse), int(refactor_after), rtol
        self.lu, self.kind, self.skip, self.fails = None, None, False, 0
        self.steps: list = []
        self.factorisations = 0
        self.krylov_iterations = 0

    def solve(self, J, b, kind: str = "newton", rtol: float | None = None,
              fresh: bool = False):
        """``x`` with ``J x = b`` to ``rtol`` (relative to ``|b|``; default ``self.rtol``);
        ``fresh``: factorise ``J`` (the caller knows it moved far from the kept LU's)."""
        rtol = self.rtol if rtol is None else max(float(rtol), self.rtol)
        bn = float(np.linalg.norm(b))
        if bn == 0.0:
            self.steps.append(0)
            return np.zeros_like(b)
        if self.reuse and self.lu is not None and self.kind == kind \
                and self.lu.shape == J.shape and not self.skip and not fresh:
            lu = self.lu

            def prec(r, z):
                z[...] = lu.solve(r)

            try:
                x, hist, ok = gmres(_Op(J), b, np.zeros_like(b), prec, tol=rtol * bn,
                                    maxiter=self.refactor_after, restart=self.refactor_after)
            except SolveError:     # a breakdown or NaN: the factorisation decides
                x, hist, ok = None, [bn] * (self.refactor_after + 1), False
            its = len(hist) - 1
            self.krylov_iterations += its
            if ok and x is not None and np.isfinite(x).all():
                self.fails = 0
                self.steps.append(its)
                if its > SLOW_FRACTION * self.refactor_after:   # slowing: a fresh LU next
                    self.lu = None
                return x
            # given up twice running: the next step factorises at once (a diverging Newton
            # stage, (1, 0.9, 0.3) at Re 1000, failed every try: refactor_after solves
            # wasted each; after one failure the fresh LU is often good: DFG 2D-1, N 128)
            self.fails += 1
            self.skip = self.fails >= 2
            return self._factorise(J, b, bn, kind)
        self.skip = False
        return self._factorise(J, b, bn, kind)

    def _factorise(self, J, b, bn, kind):
        from scipy.sparse.linalg import splu

        try:
            lu = splu(J.tocsc(), permc_spec="COLAMD")
        except RuntimeError as exc:
            raise SolveError(f"direct: the matrix is singular ({exc}); a singular system has "
                             "no unique solution") from None
        x = lu.solve(b)
        if not np.isfinite(x).all():
            raise SolveError("direct: the matrix is singular or too ill-conditioned (the "
                             "factorisation produced NaN/inf)")
        self.lu, self.kind = lu, kind
        self.factorisations += 1
        self.steps.append("lu")
        return x


@dataclass
class FlowProblem:
    """What a flow solve needs besides the mesh.

    ``fixed`` are the P2 dofs with a given velocity, ``gx, gy`` full-length P2 vectors holding
    those values (elsewhere ignored); ``fx, fy`` P2 load vectors of a body force (or None);
    ``pin`` P1 dofs whose pressure is fixed to ``pin_values`` (needed only when no boundary is
    free, as in a closed box).
    """

    th: TaylorHood
    nu: float
    fixed: np.ndarray
    gx: np.ndarray
    gy: np.ndarray
    fx: np.ndarray | None = None
    fy: np.ndarray | None = None
    pin: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pin_values: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self):
        if not (np.isfinite(self.nu) and self.nu > 0):
            raise ValueError(f"viscosity nu must be > 0, got {self.nu!r}")


@dataclass
class FlowState:
    """Velocity components (P2) and pressure (P1), with the solve's record."""

    ux: np.ndarray
    uy: np.ndarray
    p: np.ndarray
    iterations: int = 0
    history: list = field(default_factory=list)     # Newton update norms
    linear_time: float = 0.0
    linear: list = field(default_factory=list)      # each step's solve: "lu" or GMRES its
    time: float = 0.0


def momentum_residual(prob: FlowProblem, ux, uy, p, dudt=None):
    """The unconstrained momentum residuals ``(R_x, R_y)`` (P2 load vectors) of the weak form,
    plus ``(M dudt_c, v)`` when ``dudt`` is given. Their value on the body's dofs is minus the
    force the fluid exerts on it (the volume-integral form of the force)."""
    th = prob.th
    cx, cy = th.convection_vector(ux, uy)
    rx = prob.nu * (th.K @ ux) + cx - th.Bx.T @ p
    ry = prob.nu * (th.K @ uy) + cy - th.By.T @ p
    if prob.fx is not None:
        rx = rx - prob.fx
    if prob.fy is not None:
        ry = ry - prob.fy
    if dudt is not None:
        rx = rx + th.M @ dudt[0]
        ry = ry + th.M @ dudt[1]
    return rx, ry


def _jacobian(prob: FlowProblem, ux, uy, picard: bool):
    th = prob.th
    A = prob.nu * th.K + th.convection(ux, uy)
    if picard:
        Nxx = Nxy = Nyx = Nyy = None
    else:
        gx, gy = th.grad_at_quad(ux), th.grad_at_quad(uy)
        Nxx, Nxy = th.weighted_mass(gx[0]), th.weighted_mass(gx[1])
        Nyx, Nyy = th.weighted_mass(gy[0]), th.weighted_mass(gy[1])
    Axx = A + Nxx if Nxx is not None else A
    Ayy = A + Nyy if Nyy is not None else A
    return sp.bmat([[Axx, Nxy, -th.Bx.T], [Nyx, Ayy, -th.By.T], [-th.Bx, -th.By, None]],
                   format="csr")


def _free(prob: FlowProblem):
    th = prob.th
    keep = np.ones(th.dofs_total, dtype=bool)
    keep[prob.fixed] = False
    keep[th.nv + prob.fixed] = False
    keep[2 * th.nv + prob.pin] = False
    return np.flatnonzero(keep)


def initial_state(prob: FlowProblem) -> FlowState:
    """Zero flow with the boundary values in place."""
    th = prob.th
    ux, uy, p = np.zeros(th.nv), np.zeros(th.nv), np.zeros(th.np)
    ux[prob.fixed], uy[prob.fixed] = prob.gx[prob.fixed], prob.gy[prob.fixed]
    p[prob.pin] = prob.pin_values
    return FlowState(ux, uy, p)


def solve_steady(prob: FlowProblem, *, state: FlowState | None = None, tol: float = 1e-8,
                 maxiter: int = 25, picard: int = 1, reporter=None,
                 stall_after: int | None = None, step0: int = 0,
                 reuse: bool = True) -> FlowState:
    """Newton's method from ``state`` (default: Stokes flow, the first step with the zero
    convection). ``picard`` first steps use the Picard (Oseen) linearisation, which converges
    from further away. Stops when the update is below ``tol`` relative to the velocity;
    raises ``RuntimeError`` naming the last update when ``maxiter`` steps do not get there
    (or, with ``stall_after``, when the update is still above 0.1 after that many steps:
    Newton far from converging, where a caller has a cheaper way on). ``step0``: the steps
    taken before (a continuation's earlier stages), so the reported steps keep counting.
    ``reuse``: keep a step's LU as GMRES's preconditioner on the next steps
    (:class:`NewtonSolves`; ``False``: factorise every step); ``state.linear`` records each
    step's solve."""
    reporter = reporter or NullReporter()
    th = prob.th
    st = state or initial_state(prob)
    free = _free(prob)
    nv = th.nv
    t0 = time.perf_counter()
    solves = NewtonSolves(reuse=reuse)
    for it in range(1, maxiter + 1):
        if reporter.should_stop():   # round 34: the state so far goes with the stop
            exc = JobCancelled(f"cancelled after {it - 1} Newton steps")
            exc.arrays = {"ux": st.ux.copy(), "uy": st.uy.copy(), "p": st.p.copy(),
                          "iteration": np.int64(step0 + it - 1)}
            exc.partial = {"newton_steps": step0 + it - 1, "converged": False,
                           "re_stage": float(1.0 / prob.nu) if prob.nu else None,
                           "updates": [float(v) for v in st.history],
                           "solves": [v if v == "lu" else int(v) for v in st.linear]}
            raise exc
        rx, ry = momentum_residual(prob, st.ux, st.uy, st.p)
        rp = -(th.Bx @ st.ux + th.By @ st.uy)
        R = np.concatenate([rx, ry, rp])
        J = _jacobian(prob, st.ux, st.uy, picard=it <= picard)
        Jf = J[free][:, free]
        tl = time.perf_counter()
        moved = bool(st.history) and it > 1 and st.history[-1] > REUSE_BELOW
        x = solves.solve(Jf, -R[free], kind="picard" if it <= picard else "newton",
                         fresh=moved)
        st.linear.append(solves.steps[-1])
        st.linear_time += time.perf_counter() - tl
        d = np.zeros(th.dofs_total)
        d[free] = x
        st.ux += d[:nv]
        st.uy += d[nv:2 * nv]
        st.p += d[2 * nv:]
        size = max(np.abs(np.concatenate([st.ux, st.uy])).max(), 1e-300)
        change = float(np.abs(d[:2 * nv]).max() / size)
        st.history.append(change)
        st.iterations = it
        reporter.metric("newton_update", change, step=step0 + it)
        reporter.progress(step0 + it, None, unit="Newton step",
                          message=f"Newton {step0 + it}: |du|/|u| = {change:.2e}")
        if change < tol:
            st.time = time.perf_counter() - t0
            return st
        if stall_after is not None and it >= stall_after and change > 0.1:
            raise RuntimeError(f"Newton did not converge: the update is {change:.3e} "
                               f"relative to the velocity after {it} steps")
    raise RuntimeError(f"Newton did not converge in {maxiter} steps (last update "
                       f"{st.history[-1]:.3e} relative to the velocity)")

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
skiff's :class:`~skiff.kernels.solve.solver.Solver` (``method='direct'``: the factorisation
changes every step, and a sparse LU is the robust choice for a 2D saddle point of this size).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from skiff.kernels.backend.report import JobCancelled, NullReporter

from ..solver import Solver
from .spaces import TaylorHood

__all__ = ["FlowProblem", "FlowState", "solve_steady", "momentum_residual"]


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
                 stall_after: int | None = None, step0: int = 0) -> FlowState:
    """Newton's method from ``state`` (default: Stokes flow, the first step with the zero
    convection). ``picard`` first steps use the Picard (Oseen) linearisation, which converges
    from further away. Stops when the update is below ``tol`` relative to the velocity;
    raises ``RuntimeError`` naming the last update when ``maxiter`` steps do not get there
    (or, with ``stall_after``, when the update is still above 0.1 after that many steps:
    Newton far from converging, where a caller has a cheaper way on). ``step0``: the steps
    taken before (a continuation's earlier stages), so the reported steps keep counting."""
    reporter = reporter or NullReporter()
    th = prob.th
    st = state or initial_state(prob)
    free = _free(prob)
    nv = th.nv
    t0 = time.perf_counter()
    for it in range(1, maxiter + 1):
        if reporter.should_stop():
            raise JobCancelled(f"cancelled after {it - 1} Newton steps")
        rx, ry = momentum_residual(prob, st.ux, st.uy, st.p)
        rp = -(th.Bx @ st.ux + th.By @ st.uy)
        R = np.concatenate([rx, ry, rp])
        J = _jacobian(prob, st.ux, st.uy, picard=it <= picard)
        Jf = J[free][:, free]
        tl = time.perf_counter()
        sol = Solver(Jf, method="direct").solve(-R[free], rtol=1e-12)
        st.linear_time += time.perf_counter() - tl
        d = np.zeros(th.dofs_total)
        d[free] = sol.x
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

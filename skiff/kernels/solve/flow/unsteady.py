"""Time-dependent incompressible Navier-Stokes: BDF2 with incremental pressure correction.

One step from ``(u^n, u^{n-1}, p^n)`` to ``(u^{n+1}, p^{n+1})`` on Taylor-Hood P2/P1
(``a = 3/2``; the first step is BDF1 with ``a = 1``):

1. momentum, convection linearised about ``u_e = 2 u^n - u^{n-1}`` (semi-implicit, no CFL
   limit), each component with the same matrix::

       (a/dt M + nu K + C(u_e)) u*_c = M (2 u^n_c - u^{n-1}_c / 2) / dt + B_c^T p^n,

   ``u* = g^{n+1}`` on the Dirichlet boundary. BiCGStab + Jacobi (the matrix is dominated by
   ``M / dt``: a few iterations), a new matrix each step;
2. pressure correction ``Kp phi = -(a / dt) (Bx u*_x + By u*_y)``, ``phi = 0`` at the outlet:
   the P1 Laplacian never changes, so its CG + smoothed-aggregation AMG :class:`Solver` is set
   up once and reused every step;
3. velocity correction ``M u_c = M u*_c - (dt / a) G_c phi`` (``G_c = int v_i d_c q_j``), with a
   CG + Jacobi mass solver also set up once;
4. ``p^{n+1} = p^n + phi - nu div u*`` (the rotational form, Guermond-Minev-Shen: it removes
   the artificial pressure boundary layer of the standard form, which the surface forces
   read; ``div u*`` projected on P1 with the lumped mass).

All linear solves go through skiff's :class:`~skiff.kernels.solve.solver.Solver`; the time
spent in them is kept per kind (``momentum``, ``pressure``, ``mass``).
"""

from __future__ import annotations

import time

import numpy as np

from skiff.kernels.backend.report import JobCancelled, NullReporter

from ..solver import Solver
from .steady import FlowProblem, FlowState

__all__ = ["Stepper", "run_steps"]


class Stepper:
    """Advance a :class:`FlowProblem` in time with step ``dt``.

    ``boundary(t)`` returns ``(gx, gy)`` (full P2 vectors, read on ``prob.fixed``) at time
    ``t``; ``outlet`` are the P1 dofs where the pressure correction is zero (a free boundary);
    ``forcing(t)``, when given, returns the body force's P2 load vectors ``(fx, fy)`` at ``t``
    (else ``prob.fx, prob.fy`` hold at all times). ``device``: where the three linear solves of
    a step run (skiff's Solver: ``"cpu"``, ``"cuda"``, ``"cuda:N"``); assembly stays on the
    CPU (scikit-fem) and each solve's right-hand side and answer cross once per solve.
    """

    def __init__(self, prob: FlowProblem, dt: float, boundary, outlet, *, rotational=True,
                 rtol=1e-8, forcing=None, device="cpu"):
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"time step dt must be > 0, got {dt!r}")
        from skfem import BilinearForm, asm

        self.prob, self.dt, self.boundary = prob, float(dt), boundary
        self.rotational, self.rtol, self.forcing = rotational, rtol, forcing
        self.device = device
        th = prob.th
        self.th = th
        nv = th.nv
        keep = np.ones(nv, dtype=bool)
        keep[prob.fixed] = False
        self.free = np.flatnonzero(keep)
        pkeep = np.ones(th.np, dtype=bool)
        pkeep[np.asarray(outlet, dtype=np.int64)] = False
        self.pfree = np.flatnonzero(pkeep)
        if self.pfree.size == th.np:
            raise ValueError("the pressure correction needs an outlet (a boundary where "
                             "the pressure is free); none was given")

        @BilinearForm
        def gx(q, v, w):
            return v * q.grad[0]

        @BilinearForm
        def gy(q, v, w):
            return v * q.grad[1]

        self.Gx = asm(gx, th.Q, th.V).tocsr()        # (nv, np)
        self.Gy = asm(gy, th.Q, th.V).tocsr()
        t0 = time.perf_counter()
        f, pf = self.free, self.pfree
        self.pressure = Solver(th.Kp[pf][:, pf], method="cg", precond="amg", device=device)
        self.mass = Solver(th.M[f][:, f], method="cg", precond="jacobi", device=device)
        self.Mff = th.M[f][:, f]
        self.restrict = th.restriction(f)
        self.mass_data, self.stiffness_data = th.mass_data(), th.stiffness_data()
        self.setup_time = time.perf_counter() - t0
        self.times = {"momentum": 0.0, "pressure": 0.0, "mass": 0.0, "assembly": 0.0}
        self.iterations = {"momentum": 0, "pressure": 0, "mass": 0}
        self.steps = 0

    def _solve(self, kind, solver, b, x0):
        t0 = time.perf_counter()
        sol = solver.solve(b, x0=x0, rtol=self.rtol, strict=True)
        self.times[kind] += time.perf_counter() - t0
        self.iterations[kind] += sol.iterations
        return sol.x

    def step(self, st: FlowState, prev: FlowState | None, t_new: float) -> FlowState:
        """The state at ``t_new = t + dt`` from ``st`` (time ``t``) and ``prev`` (``t - dt``;
        None on the first step, which is then BDF1)."""
        th, prob, dt, f = self.th, self.prob, self.dt, self.free
        fixed = prob.fixed
        if prev is None:
            a, ex, ey = 1.0, st.ux, st.uy
            hx, hy = th.M @ st.ux / dt, th.M @ st.uy / dt
        else:
            a = 1.5
            ex, ey = 2 * st.ux - prev.ux, 2 * st.uy - prev.uy
            hx = th.M @ (2 * st.ux - 0.5 * prev.ux) / dt
            hy = th.M @ (2 * st.uy - 0.5 * prev.uy) / dt
        gx, gy = self.boundary(t_new)
        # 1. momentum
        t0 = time.perf_counter()
        data = (a / dt) * self.mass_data + prob.nu * self.stiffness_data + \
            th.convection_data(ex, ey)
        A, Aff = th.pattern_matrix(data), self.restrict(data)
        self.times["assembly"] += time.perf_counter() - t0
        momentum = Solver(Aff, method="bicgstab", precond="jacobi", device=self.device)
        star = []
        fx, fy = self.forcing(t_new) if self.forcing is not None else (prob.fx, prob.fy)
        for h, B, g, e, fc in ((hx, th.Bx, gx, ex, fx), (hy, th.By, gy, ey, fy)):
            rhs = h + B.T @ st.p
            if fc is not None:
                rhs = rhs + fc
            u = np.zeros(th.nv)
            u[fixed] = g[fixed]
            lift = (A @ u)[f]                  # the known boundary values moved to the rhs
            u[f] = self._solve("momentum", momentum, rhs[f] - lift, e[f])
            star.append(u)
        sx, sy = star
        # 2. pressure correction
        div = th.Bx @ sx + th.By @ sy
        phi = np.zeros(th.np)
        phi[self.pfree] = self._solve("pressure", self.pressure,
                                      -(a / dt) * div[self.pfree], None)
        # 3. velocity correction (the Dirichlet values stay)
        out = []
        for s, G in ((sx, self.Gx), (sy, self.Gy)):
            u = s.copy()
            rhs = self.Mff @ s[f] - (dt / a) * (G @ phi)[f]
            u[f] = self._solve("mass", self.mass, rhs, s[f])
            out.append(u)
        # 4. pressure
        p = st.p + phi
        if self.rotational:
            p = p - prob.nu * div / th.Mp_lumped
        self.steps += 1
        new = FlowState(out[0], out[1], p)
        new.dudt = ((a * new.ux - (2 * st.ux - 0.5 * prev.ux if prev is not None else st.ux))
                    / dt, (a * new.uy - (2 * st.uy - 0.5 * prev.uy if prev is not None
                                         else st.uy)) / dt)
        return new

    def linear_time(self) -> float:
        return self.times["momentum"] + self.times["pressure"] + self.times["mass"]


def run_steps(stepper: Stepper, state: FlowState, steps: int, *, t0: float = 0.0,
              on_step=None, reporter=None, prev: FlowState | None = None, start: int = 0):
    """Advance ``steps`` steps from ``state`` at time ``t0``; ``on_step(n, t, new_state)``
    after each. Returns the last state. Honours ``reporter.should_stop()``. ``start``,
    ``prev``: go on from step ``start`` (``state`` at ``t0 + start dt``, ``prev`` one step
    before it: BDF2's history), as a run kept at that step would (round 47 h21)."""
    reporter = reporter or NullReporter()
    st = state
    for n in range(int(start) + 1, steps + 1):
        if reporter.should_stop():
            raise JobCancelled(f"cancelled after {n - 1} of {steps} time steps")
        t = t0 + n * stepper.dt
        new = stepper.step(st, prev, t)
        prev, st = st, new
        if on_step is not None:
            on_step(n, t, st)
    return st

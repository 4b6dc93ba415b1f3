"""``DistributedSolver``: a grid problem solved on every rank of an MPI world.

Each rank holds its block of the grid (:mod:`.decompose`), the Krylov vectors and the
distributed multigrid levels on it; the solution is gathered to rank 0 at the end, where the
:class:`~..solution.Solution` is the serial one plus the record of the run: ``ranks``,
``subdomains`` (each rank's index range), ``halo_bytes`` (sent by all ranks together),
``gather_bytes`` and ``wait_s`` / ``wait_cpu_s`` (the most time a rank spent inside MPI calls
during the solve, wall and CPU). Other ranks get ``None`` from :meth:`DistributedSolver.solve`.

What runs distributed: the Krylov methods (CG, pipelined CG, BiCGStab, GMRES, MINRES: the serial
loops, with global sums) with the multigrid, Jacobi or no preconditioner, and stationary
multigrid cycles (``method="mg"``), red-black Gauss-Seidel smoothing, diffusion problems (no
convection). :func:`check_distributed` names what does not, with what to use instead.

A :class:`~..problems.GridProblem` is built whole on every rank's host, which keeps its block;
a problem with ``rhs_block`` / ``exact_block`` (:class:`.problems.PoissonBlocks`, the built-in
Poisson) is built block by block, so a rank holds only its share on the host too.
"""

from __future__ import annotations

import math
import time

import numpy as np

from skiff.kernels.backend import resolve_device, to_numpy, xp_for
from skiff.kernels.backend.devices import DEFAULT_DEVICE

from ..krylov import KRYLOV
from ..minres import minres
from ..solution import Solution
from ..solver import (
    SCIPY_RESTART,
    attainable_failed,
    attainable_status,
    check_tolerances,
    resolve_precond,
)
from .decompose import Decomposition
from .halo import world_comm
from .krylov import DistributedOperator, Jacobi
from .multigrid import DistributedMG
from .operator import BlockLevel

__all__ = ["DistributedSolver", "check_distributed", "DIST_METHODS", "DIST_PRECONDS"]

DIST_METHODS = ("cg", "pipecg", "bicgstab", "gmres", "mg", "minres")
DIST_PRECONDS = ("auto", "none", "jacobi", "mg")


def check_distributed(*, method="cg", precond="auto", smoother="rbgs", cycle="V",
                      convection=False, problem=None, periodic=False) -> None:
    """Raise ``ValueError`` (one line, with what to use instead) for what a distributed solve
    cannot do yet."""
    if problem in ("cylinder", "train-nose"):
        raise ValueError(f"problem {problem!r} (the flow solver) runs on one rank: drop --np "
                         "(skiff.aero.sweep runs many shapes in parallel processes)")
    if periodic:
        raise ValueError("periodic sides do not run distributed yet (the halo exchange does "
                         "not wrap around): solve it on one rank (drop --np)")
    if convection:
        raise ValueError("convection does not run distributed yet (no halo for its upwind "
                         "term): solve it on one rank (drop --np)")
    if method not in DIST_METHODS:
        raise ValueError(f"method {method!r} does not run distributed yet: with --np use "
                         f"{' or '.join(DIST_METHODS)}")
    if precond not in DIST_PRECONDS:
        raise ValueError(f"precond {precond!r} does not run distributed yet: with --np use "
                         f"{', '.join(DIST_PRECONDS)}")
    if smoother != "rbgs":
        raise ValueError(f"smoother {smoother!r} does not run distributed yet: with --np use "
                         "rbgs")


class DistributedSolver:
    """Set up a grid problem over the ranks of ``comm`` (default: MPI's world).

    Parameters as :class:`~..solver.Solver`, for the methods of :func:`check_distributed`.
    """

    def __init__(self, problem, *, method="cg", precond="auto", cycle="V", smoother="rbgs",
                 pre=2, post=2, restart=30, device=DEFAULT_DEVICE, compatibility=None,
                 interpolation="auto", comm=None):
        t0 = time.perf_counter()
        precond_name = resolve_precond(precond, method, True)
        check_distributed(method=method, precond=precond_name, smoother=smoother,
                          cycle=cycle, convection=problem.velocity is not None,
                          periodic=any(getattr(problem.stencil, "periodic", ())))
        self.problem, self.method, self.precond_name = problem, method, precond_name
        if restart is None:   # SciPy's gmres(restart=None): 20, as the serial Solver
            restart = SCIPY_RESTART
        if isinstance(restart, bool) or not isinstance(restart, (int, np.integer)) or restart < 1:
            raise ValueError(f"restart (GMRES's restart length) must be a positive integer (or "
                             f"None: SciPy's 20), got restart={restart!r}; typical: 30")
        self.compatibility, self.restart = compatibility, int(restart)
        self.comm = comm if comm is not None else world_comm()
        self.device = resolve_device(device)
        self.xp = xp = xp_for(self.device)
        self.dec = Decomposition(problem.shape3, self.comm.size)
        self.level0 = BlockLevel(problem.stencil, self.dec, self.comm.rank, problem.signs,
                                 self.comm, xp)
        self.op = DistributedOperator(self.level0, self.comm)
        self.mg = None
        if method == "mg" or precond_name == "mg":
            self.mg = DistributedMG(problem.stencil, problem.signs, self.dec, self.comm,
                                    cycle=cycle, pre=pre, post=post, singular=problem.singular,
                                    interpolation=interpolation, level0=self.level0, xp=xp)
        self.M = None
        if method != "mg" and precond_name == "mg":
            self.M = self.mg.precondition
        elif method != "mg" and precond_name == "jacobi":
            self.M = Jacobi(self.level0)
        if self.device.is_gpu:
            xp.cuda.Device().synchronize()
        self.setup_time = time.perf_counter() - t0

    def describe(self) -> str:
        pre = ("geometric multigrid " + self.mg.describe()) if self.mg is not None else (
            "Jacobi (diagonal)" if self.precond_name == "jacobi" else "none")
        return (f"{self.method} with {pre} on {self.device.name}, "
                f"{self.dec.describe(self.problem.ndim)}")

    def _local_b(self, b):
        """This rank's block of ``b`` (None: the problem's right-hand side, built for the
        block alone when the problem can), made compatible for a singular problem."""
        blk = self.dec.block(self.comm.rank)
        if b is None and hasattr(self.problem, "rhs_block"):
            local = np.ascontiguousarray(self.problem.rhs_block(blk), dtype=np.float64)
        else:
            host = self.problem.rhs if b is None else b
            host = np.asarray(to_numpy(host), dtype=np.float64).reshape(self.problem.shape3)
            local = np.ascontiguousarray(host[tuple(slice(lo, hi) for lo, hi in blk)])
        if self.problem.singular:
            mean = self.comm.allreduce([local.sum()])[0] / self.problem.unknowns
            scale = float(self.comm.maximum([np.abs(local).max(initial=0.0)])[0])
            if self.compatibility == "project":
                local -= mean
            elif abs(mean) > 1e-10 * max(scale, 1e-300):
                raise ValueError(
                    f"the problem is singular (Neumann on every side: u is defined up to a "
                    f"constant) and b is not compatible (mean of b = {mean:.3e}, it must be "
                    f"0); pass compatibility='project' to remove the mean")
        return local

    def solve(self, b=None, *, x0=None, rtol=1e-8, atol=0.0, maxiter=None, reporter=None,
              callback=None) -> Solution | None:
        """Solve on every rank (every rank must call it); the :class:`Solution` on rank 0,
        None on the others. ``reporter`` receives the residual on rank 0; a stop asked of
        rank 0 stops every rank at the same iteration."""
        check_tolerances(rtol, atol, maxiter)
        xp, comm, lv = self.xp, self.comm, self.level0
        root = comm.rank == 0
        b_local = xp.asarray(self._local_b(b))
        bnorm = math.sqrt(comm.allreduce([float((b_local * b_local).sum())])[0])
        tol = max(rtol * bnorm, atol)
        if maxiter is None:
            maxiter = 100 if self.method == "mg" else min(10 * self.problem.unknowns, 20000)
            if self.method == "gmres":   # restart cycles: the same inner iterations as ever
                maxiter = -(-maxiter // self.restart)
        decades = max(math.log10(bnorm / tol), 1e-9) if bnorm > 0 and tol > 0 else 1.0
        x = lv.zeros()
        if x0 is not None:   # the whole grid's x0 (a stopped run's partial.npz): this block
            host = np.asarray(to_numpy(x0), dtype=np.float64)
            if host.size != self.problem.unknowns:
                raise ValueError(f"x0 has {host.size} entries (shape {host.shape}) but the "
                                 f"system has {self.problem.unknowns} unknowns")
            blk = self.dec.block(comm.rank)
            x[lv.inner] = xp.asarray(host.reshape(self.problem.shape3)[
                tuple(slice(lo, hi) for lo, hi in blk)])
        comm.reset()

        def on_iter(it, rnorm, xk):
            stop = root and report_iteration(reporter, it, rnorm, bnorm, decades)
            if comm.size > 1:
                stop = comm.bcast_flag(stop)
            if stop:   # every rank at once (the flag above): the iterate goes with it
                from skiff.kernels.backend.report import JobCancelled

                exc = JobCancelled("cancelled by request")
                exc.x, exc.iteration, exc.rnorm = xk, it, rnorm
                raise exc
            if callback is not None:
                callback(it, rnorm)

        t0 = time.perf_counter()
        try:
            x, hist, converged = self._iterate(b_local, x, tol, maxiter, on_iter, bnorm)
        except Exception as exc:
            from skiff.kernels.backend.report import JobCancelled

            if isinstance(exc, JobCancelled):
                self._keep_stopped(exc, b_local, bnorm)
            raise
        if self.problem.singular and self.compatibility == "project":
            xi = x[lv.inner]
            xi -= comm.allreduce([float(xi.sum())])[0] / self.problem.unknowns
        if self.device.is_gpu:
            xp.cuda.Device().synchronize()
        elapsed = time.perf_counter() - t0
        halo, gathers = comm.halo_bytes, comm.gather_bytes
        waits = comm.maximum([comm.wait_s, comm.wait_cpu])   # the solve's, before the gather
        # |b - A x| of the x returned, as the serial Solver reports it (round 38 h9: the
        # recurrence's was reported, 6.9e-11 on the 1000:1 jump at 128^2 where the one-rank
        # solve of the same iterate says 2.9e-10); after the counts, as a solve's own cost
        true = self._true_norm(x, b_local)
        local_x = to_numpy(x[lv.inner])
        err = None
        if hasattr(self.problem, "exact_block"):   # the error against the exact solution
            exact = self.problem.exact_block(self.dec.block(comm.rank))
            if exact is not None:
                err = float(comm.maximum([np.abs(local_x - exact).max(initial=0.0)])[0])
        field = comm.gather_blocks(np.ascontiguousarray(local_x), self.dec)
        totals = comm.allreduce([halo, gathers])
        if not root:
            return None
        sol = self._solution(field, hist, converged, elapsed, bnorm, tol, maxiter,
                             int(totals[0]), int(totals[1]), reporter, true)
        sol.info.update(wait_s=float(waits[0]), wait_cpu_s=float(waits[1]))
        if err is not None:
            sol.error = err
        return sol


    def _iterate(self, b_local, x, tol, maxiter, on_iter, bnorm):
        """The method's iterations from ``x``: ``(x, residual history, converged)``."""
        lv = self.level0
        if bnorm == 0:
            return x, [0.0], True
        if self.method == "mg":
            return self.mg.iterate(b_local, x, tol=tol, maxiter=maxiter,
                                   callback=on_iter)
        bp = lv.zeros()
        bp[lv.inner] = b_local
        # on_iter reads no x: GMRES need not form its cycle's iterate for it
        kw = {"restart": self.restart, "iterate": False} if self.method == "gmres" else {}
        # GMRES's maxiter counts restart cycles (SciPy's meaning, as the serial Solver)
        inner = maxiter * self.restart if self.method == "gmres" else maxiter
        try:
            fn = minres if self.method == "minres" else KRYLOV[self.method]
            return fn(self.op, bp, x, self.M, tol=tol, maxiter=inner, callback=on_iter,
                      **kw)
        except FloatingPointError as exc:
            from ..krylov import SolveError

            raise SolveError(str(exc)) from None

    def _keep_stopped(self, exc, b_local, bnorm) -> None:
        """A solve stopped by a cancel (every rank at the same iteration; round 34): its last
        iterate gathered on rank 0 and attached to the :class:`JobCancelled`, as the serial
        :meth:`.Solver._keep_stopped` does (``exc.arrays`` ``x``, ``iteration``; ``exc.partial``
        with the true ``|b - A x|/|b|``, one more product and a sum over the ranks)."""
        xk = getattr(exc, "x", None)
        if xk is None:
            return
        lv, comm = self.level0, self.comm
        true = self._true_norm(xk, b_local)
        field = comm.gather_blocks(np.ascontiguousarray(to_numpy(xk[lv.inner])), self.dec)
        if comm.rank != 0:
            return
        k, rec = int(getattr(exc, "iteration", 0)), getattr(exc, "rnorm", None)
        exc.arrays = {"x": np.asarray(field).reshape(self.problem.shape), "iteration": np.int64(k)}
        exc.partial = {
            "iterations": k, "converged": False,
            "residual": true / bnorm if bnorm else true,
            "relative_residual": true / bnorm if bnorm else true,   # as a finished solve's
            "recurrence_residual": None if rec is None or not bnorm else float(rec) / bnorm,
            "method": self.method, "precond": self.precond_name,
            "unknowns": int(self.problem.unknowns), "ranks": comm.size,
            "warm_start": "x0 = partial.npz's x (skiff solve ... --x0 RUN/partial.npz)"}

    def _true_norm(self, x, b_local) -> float:
        """``|b - A x|`` over all ranks (every rank calls it: one product, one sum)."""
        lv = self.level0
        ax = lv.zeros()
        self.op.matvec(x, ax)
        r = b_local - ax[lv.inner]
        return math.sqrt(self.comm.allreduce([float((r * r).sum())])[0])

    def _bytes(self, iters: int) -> float:
        """Bytes the kernels of all ranks must move at least (as the serial solver counts)."""
        n = self.problem.unknowns
        per_cycle = self.mg.cycle_bytes() * self.comm.size if self.mg is not None else 0.0
        if self.method == "mg":
            return per_cycle * max(iters, 1)
        matvec = 8 * n * (2 if self.level0.const else 6)
        vec = {"cg": 12, "pipecg": 24, "bicgstab": 20, "gmres": 12 + self.restart,
               "minres": 16 if self.M is None else 26}[self.method]
        matvecs = 2 if self.method == "bicgstab" else 1
        return (matvecs * (matvec + per_cycle) + 8 * n * vec) * iters

    def _solution(self, field, hist, converged, elapsed, bnorm, tol, maxiter, halo, gathers,
                  reporter, true):
        p = self.problem
        field = field.reshape(p.shape)
        if not np.isfinite(field).all():
            from ..krylov import SolveError

            raise SolveError(f"{self.method}: the solution became NaN/inf after "
                             f"{len(hist) - 1} iterations")
        err = float(np.abs(field - p.exact).max()) if p.exact is not None else None
        info = {"solver": self.describe(), "ranks": self.comm.size,
                "decomposition": list(self.dec.dims[3 - p.ndim:]),
                "subdomains": self.dec.subdomains(p.ndim), "halo_bytes": halo,
                "gather_bytes": gathers,
                "distributed_levels": self.mg.L if self.mg is not None else 1}
        sol = Solution(field=field, residuals=[float(h) for h in hist],
                       iterations=len(hist) - 1, converged=bool(converged), time=elapsed,
                       setup_time=self.setup_time, device=self.device.name,
                       method=self.method, precond=self.precond_name, bnorm=bnorm,
                       bytes_moved=self._bytes(len(hist) - 1),
                       error=err, problem=p.name, extent=p.info.get("extent"), info=info,
                       cycles=-(-(len(hist) - 1) // self.restart)
                       if self.method == "gmres" else None,
                       true_residual=true / bnorm if bnorm else None)
        settle(sol, true=true, tol=tol, bnorm=bnorm, maxiter=maxiter, restart=self.restart,
               reporter=reporter)
        if reporter is not None:
            reporter.info(solver=self.describe(), iterations=sol.iterations,
                          ranks=self.comm.size, halo_bytes=halo)
        return sol


def settle(sol, *, true: float, tol: float, bnorm: float, maxiter, restart: int,
           reporter=None) -> None:
    """A distributed solve's ending, as the serial Solver says it: ``sol.status`` (converged,
    attainable accuracy, or maxiter with what was reached: GMRES counts restart cycles, as
    SciPy's gmres) and, with a ``reporter``, the curve's last point and progress (100% when
    converged). Used by the grid split and the row split alike."""
    if sol.converged and attainable_failed(true, tol):
        sol.converged = False
        sol.status = attainable_status(true, tol, bnorm)
    elif sol.converged:
        sol.status = "converged"
    else:
        done = (f"{sol.cycles} restart cycles of {restart} ({sol.iterations} "
                f"iterations) reached (maxiter={maxiter} counts cycles, as SciPy's gmres)"
                if sol.method == "gmres" else
                f"{sol.iterations} iterations reached (maxiter={maxiter})")
        sol.status = (f"maxiter: {done} with |r|/|b| = {sol.relative_residual:.3e} above "
                      f"the tolerance {tol / bnorm if bnorm else tol:.3e}")
    if reporter is not None:   # the last point of the curve, and 100% when converged
        rel = sol.relative_residual
        decades = max(math.log10(bnorm / tol), 1e-9) if bnorm > 0 and tol > 0 else 1.0
        done = decades if sol.converged else min(max(-math.log10(max(rel, 1e-300)), 0.0),
                                                 decades)
        reporter.metric("residual", rel, step=sol.iterations)
        reporter.progress(round(done, 3), round(decades, 3), unit="decades",
                          message=f"it {sol.iterations}: |r|/|b| = {rel:.2e}")


def report_iteration(reporter, it: int, rnorm: float, bnorm: float, decades: float) -> bool:
    """Rank 0's residual and progress for iteration ``it`` (every one to 100, then every
    tenth of a decade of iterations: a long solve's curve stays small); whether a stop was
    asked. Used by the grid split and the row split alike."""
    if reporter is None or not (it <= 100 or it % 10 ** int(math.log10(it) - 1) == 0):
        return False
    rel = rnorm / bnorm if bnorm else rnorm
    reporter.metric("residual", rel, step=it)
    done = min(max(-math.log10(max(rel, 1e-300)), 0.0), decades)
    reporter.progress(round(done, 3), round(decades, 3), unit="decades",
                      message=f"it {it}: |r|/|b| = {rel:.2e}")
    return bool(reporter.should_stop())

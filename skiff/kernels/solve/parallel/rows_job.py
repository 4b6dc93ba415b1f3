"""The job ``solve A.mtx [b.npy] --np N`` (round 39 h11): a matrix file split over the job's
MPI ranks by rows (:class:`~.rows.RowSolver`). Every rank reads the whole file (SciPy's
``mmread`` / ``load_npz`` read all of it) and keeps its block of rows; rank 0 reports the
residual each iteration through the job's reporter, as the one-rank solve does, and holds the
gathered x (a :class:`~..solution.Solution` whose ``info`` has ``ranks`` and
``subdomains``); a cancel asked of rank 0 stops every rank at the same iteration, with the
last iterate kept (``partial.npz``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..solution import Solution
from .rows import METHODS, RowSolver

__all__ = ["RowJobSolver", "check_row_split", "rows_system"]

# the grammar's names the row split takes, and what each means here
_METHOD = {"auto": None, "cg": "cg", "bicgstab": "bicgstab", "gmres": "gmres",
           "cocg": "cocg"}   # cocg: round 47 (h4), a complex symmetric matrix
# --precond amg: block Jacobi, one smoothed-aggregation V-cycle of each rank's diagonal block
# (round 40 h7, ``block_local.py``); --precond ilu: ILU(0) (IC(0)) of each block (h10)
# --precond ilut (round 45 h4): ILUT of each block, GMRES / BiCGStab (auto's method: GMRES)
_PRECOND = {"auto": None, "jacobi": "jacobi", "ilu": "ilu", "ilut": "ilut", "amg": "amg",
            "none": "none"}
_BLOCKS = ("ilu", "ilut", "amg")


def check_row_split(method, precond, ranks, overlap=0, coarse=None, schwarz=None) -> None:
    """Refuse, in one line, a method, preconditioner or overlap the row split does not
    run."""
    method = method or "auto"
    precond = precond or "auto"
    if method not in _METHOD:
        raise ValueError(f"--np {ranks}: --method {method} is not split by rows; a matrix "
                         f"file on several ranks runs {', '.join(METHODS)} (or auto: cg for a "
                         f"symmetric matrix with a positive diagonal, cocg for a complex "
                         f"symmetric one, else bicgstab): give one "
                         f"of them, or drop --np")
    if precond not in _PRECOND:
        raise ValueError(f"--np {ranks}: --precond {precond} is not split by rows; a matrix "
                         f"file on several ranks takes --precond jacobi, ilu (block Jacobi: "
                         f"ILU(0) of each rank's block, IC(0) when symmetric), ilut (ILUT of "
                         f"each block), amg (a V-cycle of each rank's block), none (auto: amg "
                         f"where the diagonal is positive, else jacobi): give one of them, or "
                         f"drop --np")
    from .rows import MAX_OVERLAP

    if not 0 <= overlap <= MAX_OVERLAP:
        raise ValueError(f"--np {ranks}: --overlap {overlap}; the row split grows each rank's "
                         f"block by 1 to {MAX_OVERLAP} layers of its neighbours' rows "
                         f"(additive Schwarz) or none (0)")
    if precond == "ilut" and method == "cocg":   # round 47 (h4), as one rank's
        raise ValueError(f"--np {ranks}: --precond ilut is not symmetric and COCG needs a "
                         f"complex symmetric preconditioner (M = M^T): give --method gmres or "
                         f"bicgstab with it, or --precond ilu / amg / jacobi with cocg")
    if precond == "ilut" and method == "cg":   # round 45 (h4)
        raise ValueError(f"--np {ranks}: --precond ilut is not symmetric and CG over the "
                         f"ranks needs a symmetric preconditioner: give --method gmres or "
                         f"bicgstab (auto takes gmres with ilut), or --precond ilu / amg "
                         f"with cg")
    if coarse not in (None, "auto", "none") and precond not in (*_BLOCKS, "auto"):
        raise ValueError(f"--np {ranks}: --coarse {coarse} adds a coarse level across the "
                         f"ranks to a block preconditioner, and the preconditioner is "
                         f"{precond}: give --precond amg or ilu (or ilut), or drop --coarse")
    if schwarz not in (None, "auto") and not overlap:
        raise ValueError(f"--np {ranks}: --schwarz {schwarz} is the form of an overlap's "
                         f"correction, and there is no overlap: add --overlap 1 (with "
                         f"--precond ilu or amg), or drop --schwarz")
    if schwarz == "restrict" and method in ("cg", "cocg"):
        raise ValueError(f"--np {ranks}: --schwarz restrict is not symmetric and CG needs a "
                         f"symmetric preconditioner: give --schwarz basic or weighted, or "
                         f"--method bicgstab / gmres")
    if overlap and precond not in _BLOCKS:
        raise ValueError(f"--np {ranks}: --overlap {overlap} grows each rank's block for "
                         f"--precond ilu or amg (additive Schwarz), and the preconditioner is "
                         f"{precond}: add --precond ilu or --precond amg (or ilut), or drop "
                         f"--overlap")


def _auto_precond(A) -> str:
    """Block AMG where every diagonal entry is positive (what one rank's auto takes for a
    matrix: AMG), else Jacobi. Round 40: block AMG took 58 CG iterations on a 200^2 Poisson
    over 2 ranks where Jacobi took 607 (0.32 against 0.58 CPU s a rank)."""
    return "amg" if A.shape[0] and np.all(A.diagonal().real > 0) else "jacobi"


def _auto_method(A, precond=None) -> str:
    from ..amg import is_symmetric

    if precond == "ilut":   # not symmetric: GMRES, as one rank's auto with ILUT (round 45)
        return "gmres"
    d = A.diagonal()
    if np.iscomplexobj(A.data):   # round 46 (h6): CG where A is Hermitian positive on its
        # diagonal; round 47 (h4): COCG where A is complex symmetric (one rank's auto too:
        # Helmholtz 48^2 with absorbing layers over 4 thread ranks, block AMG + the coarse
        # level, 44 iterations of one V-cycle where BiCGStab takes 32 of two), else BiCGStab
        top = abs(A).max() if A.nnz else 0.0
        herm = A.nnz == 0 or abs(A - A.conj().T).max() <= 1e-12 * top
        if herm and np.all(d.real > 0) and not np.any(d.imag):
            return "cg"
        return ("cocg" if precond != "ilut" and abs(A - A.T).max() <= 1e-12 * top
                else "bicgstab")
    return "cg" if np.all(d > 0) and is_symmetric(A) else "bicgstab"


class RowJobSolver:
    """:class:`RowSolver` with the one-rank :class:`~..solver.Solver`'s ``solve`` (what
    :func:`~..entry.solve_and_report` calls): the Solution on rank 0, None on the others."""

    def __init__(self, A, *, method="auto", precond="auto", comm=None, restart=30,
                 overlap=0, reorder="auto", coarse="auto", schwarz="auto", ilut_options=None,
                 near_nullspace=None):
        import scipy.sparse as sp

        A = sp.csr_matrix(A)
        check_row_split(method, precond, 1 if comm is None else comm.Get_size(), overlap,
                        coarse, schwarz)
        chosen = _PRECOND[precond or "auto"]
        method = _METHOD[method or "auto"] or _auto_method(A, chosen)
        try:
            pc = chosen or _auto_precond(A)
            given = ("ilut", dict(ilut_options)) if pc == "ilut" and ilut_options else pc
            self.rows = RowSolver(A, method=method, precond=given, comm=comm, restart=restart,
                                  overlap=overlap, reorder=reorder,
                                  coarse=coarse if pc in _BLOCKS else "none",
                                  schwarz=schwarz or "auto",
                                  near_nullspace=near_nullspace if pc == "amg" else None)
        except ValueError:   # auto's block AMG did not set up (said on every rank): Jacobi
            if chosen is not None or _auto_precond(A) != "amg":
                raise
            self.rows = RowSolver(A, method=method, precond="jacobi", comm=comm,
                                  restart=restart, reorder=reorder)
        self.method, self.precond = method, self.rows.precond
        self.setup_time = self.rows.setup_time
        # round 48 (h14): the constant in A's null space from both sides (a pure Neumann
        # matrix), so a b of mean 0 is in A's range: an unsolved x is not "b outside it"
        from .rows import _rows_sum_zero

        self._A = A   # every rank holds the whole A (its symmetry, for a breakdown's remedy)
        self.constant_null = (not np.iscomplexobj(A.data) and _rows_sum_zero(A)
                              and _rows_sum_zero(A.T.tocsr()))

    def describe(self) -> str:
        r = self.rows
        block, order = self._parts()
        return (f"{self.method} + {block}{self.precond} on {r.size} ranks by rows{order} ({r.n} "
                f"unknowns, {r.plan.local.shape[1] - (r.plan.hi - r.plan.lo)} ghosts on rank "
                f"{r.rank})")

    def _parts(self) -> tuple[str, str]:
        """The block solve's name (``'block '``, ``'overlap-1 schwarz '``) and what follows
        the ranks (the ordering, the coarse level across them)."""
        r = self.rows
        block = "block " if self.precond in _BLOCKS else ""   # each rank's own block
        if r.overlap:
            block = f"overlap-{r.overlap} {'weighted ' * (r.schwarz == 'weighted')}schwarz "
        order = ", rcm-ordered" if r.perm is not None else ""
        if r.coarse_size:   # round 41: the two-level method's coarse level across the ranks
            order += f", a coarse level of {r.coarse_size} across them"
            if r.coarse_level is not None and r.coarse_level.amg is not None:   # round 42
                Bc = r.coarse_level.Bc   # round 46 (h6): the near null space restricted
                order += (" (an AMG V-cycle of it)" if Bc is None else
                          f" (an AMG V-cycle of it with {Bc.shape[1]} near-null vectors)")
        return block, order

    def ran(self) -> str:
        """What ran over the ranks, for the job's summary (round 42, h14): ``'block amg, a
        coarse level of 616 across them (an AMG V-cycle of it)'``."""
        block, order = self._parts()
        return f"{block}{self.precond}{order}"

    def solve(self, b, *, x0=None, rtol=1e-8, atol=0.0, maxiter=None, reporter=None,
              stop=None) -> Solution | None:
        from ..solver import check_tolerances

        if stop not in (None, "residual"):
            raise ValueError(f"--stop {stop} runs on one rank; drop --np")
        check_tolerances(rtol, atol, maxiter)
        b = np.asarray(b)
        kw = {"rtol": rtol, "atol": atol, "maxiter": maxiter, "reporter": reporter}
        if b.ndim == 2 and b.shape[1] > 1 and b.shape[0] == self.rows.n:
            return self._solve_columns(b, x0, kw)
        return self._solve_one(b, x0=x0, **kw)

    def _solve_columns(self, B, x0, kw) -> Solution | None:
        """Each column of an ``(n, k)`` B with this setup, as one process's
        ``Solver._solve_columns`` (round 48 h14: ``--ranks 2`` refused B's columns, "drop
        --np for several"): rank 0's Solution has x ``(n, k)`` (``stack_columns``); a cancel
        in column j keeps the columns done, j's iterate and x0's (or 0) for the rest."""
        from skiff.kernels.backend.report import JobCancelled

        from ..solution import stack_columns
        from ..solver import Solver

        if x0 is not None:
            x0 = np.asarray(x0)
            if x0.shape != B.shape:
                raise ValueError(f"x0 has shape {x0.shape}; with {B.shape[1]} right-hand "
                                 f"sides (b of shape {B.shape}) it must be {B.shape} or None")
        done: list = []
        for j in range(B.shape[1]):
            try:
                done.append(self._solve_one(B[:, j], x0=None if x0 is None else x0[:, j],
                                            **kw))
            except JobCancelled as exc:
                if self.rows.rank == 0:
                    Solver._keep_columns_stopped(self, exc, B, x0, done)
                raise
        return None if self.rows.rank else stack_columns(done)

    def _solve_one(self, b, *, x0=None, rtol=1e-8, atol=0.0, maxiter=None,
                   reporter=None) -> Solution | None:
        from .solver import report_iteration

        rows, comm = self.rows, self.rows.comm
        root = rows.rank == 0
        b = np.asarray(b).ravel()
        b = b.astype(np.complex128 if np.iscomplexobj(b) else np.float64)
        bnorm = float(np.linalg.norm(b))
        tol = max(rtol * bnorm, atol)
        decades = max(math.log10(bnorm / tol), 1e-9) if bnorm > 0 and tol > 0 else 1.0

        def on_iter(it, rnorm, x_local):
            want = bool(root and report_iteration(reporter, it, rnorm, bnorm, decades))
            if comm is not None:
                want = comm.bcast(want, root=0)
            if want:   # every rank at once: the iterate goes with the exception
                self._stopped(x_local, it, rnorm, b, bnorm)

        # as _compatible's check (the job's b of a Neumann matrix): its mean is 0
        self._b_orthogonal = bool(abs(b.mean()) <= 1e-10 * max(float(np.abs(b).max()),
                                                               1e-300)) if b.size else False
        t0 = time.perf_counter()
        res = rows.iterate(b, x0=x0, rtol=rtol, atol=atol, maxiter=maxiter, callback=on_iter)
        elapsed = time.perf_counter() - t0
        x = rows.gather(res.x, root=0)
        halo = rows.op.bytes if comm is None else comm.allreduce(rows.op.bytes)
        if res.breakdown is not None and res.breakdown[1] == "cg":
            raise self._not_positive(res.breakdown[0])   # every rank: one rank's error
        if not root:
            return None
        return self._solution(x, res, elapsed, halo, maxiter, reporter)

    def _stopped(self, x_local, it, rnorm, b, bnorm):
        from skiff.kernels.backend.report import JobCancelled

        rows = self.rows
        if callable(x_local):   # GMRES forms its iterate when asked
            x_local = x_local()
        r = rows.local(b) - rows.op.matvec(x_local)
        true = rows.op.norm(r)
        x = rows.gather(x_local, root=0)
        exc = JobCancelled("cancelled by request")
        if rows.rank == 0:
            exc.arrays = {"x": x, "iteration": np.int64(it)}
            exc.partial = {
                "iterations": int(it), "converged": False,
                "residual": true / bnorm if bnorm else true,
                "relative_residual": true / bnorm if bnorm else true,
                "recurrence_residual": rnorm / bnorm if bnorm else rnorm,
                "method": self.method, "precond": self.precond, "unknowns": rows.n,
                "ranks": rows.size,
                "warm_start": "x0 = partial.npz's x (skiff solve ... --x0 RUN/partial.npz)"}
        raise exc

    def _attainable(self, status: str, res) -> str:
        """The one-rank Solver's words where the recurrence passed the tolerance and x did
        not (round 48 h14: a Neumann checkerboard 12^3 of 1e-4 / 1e4, b of mean 0, BiCGStab +
        block AMG at rtol 1e-10 over 2 ranks said "A is likely singular with b outside its
        range" where b is in it): BiCGStab's residual peak, else, where A's null space is the
        constant and b sums to zero, what one process says (``Solver._near_null_remedy``)."""
        from ..solver import PEAK_REPLACE, peak_status, residual_peak

        head, far, _ = status.partition(", far above")
        if self.method == "bicgstab" and residual_peak(res.history) >= PEAK_REPLACE:
            return peak_status(res.true, res.tol, res.bnorm, residual_peak(res.history))
        if not (far and self.constant_null and self._b_orthogonal):
            return status
        return f"{head}, far above what rounding leaves; {self._near_null()}"

    def _near_null(self, rounding: bool = False) -> str:
        """One rank's ``Solver._near_null_remedy`` where A's null space is the constant."""
        from ..solver import near_null_words

        how = (f"without a preconditioner {self.method}" if self.precond == "none" else
               f"{self.method} with precond={self.precond!r}")
        return near_null_words("the constant", how, self.precond == "amg", rounding)

    def _not_positive(self, text: str):
        """CG's p.Ap <= 0 as one rank's SolveError: where A's null space is the constant
        and b's mean is 0, rounding's (``Solver._run``'s round 48 h6 words)."""
        from ..krylov import SolveError

        if ("b has a part outside its range" in text and self.constant_null
                and self._b_orthogonal):
            text = (f"{text.split(': A looks singular')[0]}: A looks singular (positive "
                    f"semidefinite) and {self._near_null(rounding=True)}")
        return SolveError(text)

    def _stopped_short(self, text: str, code) -> str:
        """One rank's status for BiCGStab's breakdown (``code`` -10 / -11) or divergence
        (None), with its remedy (``krylov._breakdown_remedy``, ``Solver._divergence_remedy``)."""
        if code is not None:
            from ..amg import is_symmetric
            from ..krylov import _breakdown_remedy

            return f"breakdown: {text}{_breakdown_remedy(lambda: is_symmetric(self._A))}"
        tip = ("BiCGStab's residual is not minimised and can grow without bound: use "
               "method='gmres', whose residual cannot grow")
        tip += (", with a preconditioner (precond='amg', or M=spilu(A.tocsc()))"
                if self.precond == "none" else
                f", or another preconditioner than {self.precond} (precond='none', "
                f"M=scipy.sparse.linalg.spilu(A.tocsc()))")
        return (f"{text}; {tip}; rows scaled far apart (equations in other units) make it "
                f"worse: scale b with the rows, or try method='direct'")

    def _solution(self, x, res, elapsed, halo, maxiter, reporter) -> Solution:
        from .solver import settle

        rows, bnorm, tol = self.rows, res.bnorm, res.tol
        if not np.isfinite(x).all():
            from ..krylov import SolveError

            raise SolveError(f"{self.method}: the solution became NaN/inf after "
                             f"{res.iterations} iterations")
        info = {"solver": self.describe(), "ran": self.ran(), "ranks": rows.size,
                "split": "rows", "coarse": rows.coarse, "coarse_size": int(rows.coarse_size),
                "overlap": rows.overlap,
                "subdomains": rows.subdomains(), "halo_bytes": int(halo)}
        nnz = rows.plan.local.nnz * rows.size
        per_it = (2 if self.method == "bicgstab" else 1) * 12 * nnz + 8 * rows.n * {
            "cg": 12, "cocg": 12, "bicgstab": 20, "gmres": 12 + 2 * rows.restart}[self.method]
        sol = Solution(field=x, residuals=[float(h) for h in res.history],
                       iterations=len(res.history) - 1, converged=res.converged,
                       time=elapsed, setup_time=self.setup_time, device="cpu",
                       method=self.method, precond=self.precond, bnorm=bnorm,
                       bytes_moved=float(per_it * max(len(res.history) - 1, 1)),
                       problem="matrix", info=info,
                       true_residual=res.true / bnorm if bnorm else None,
                       cycles=res.iterations if self.method == "gmres" else None)
        settle(sol, true=res.true, tol=tol, bnorm=bnorm, maxiter=maxiter,
               restart=rows.restart, reporter=reporter)
        if sol.status.startswith("attainable accuracy"):
            sol.status = self._attainable(sol.status, res)
        if res.breakdown is not None:   # round 48 (h14): one rank's words and SciPy's code
            sol.status = self._stopped_short(*res.breakdown)
            sol.breakdown = res.breakdown[1]
        if reporter is not None:
            reporter.info(solver=self.describe(), iterations=sol.iterations,
                          ranks=rows.size, subdomains=rows.subdomains(), halo_bytes=int(halo))
        return sol


def _compatible(A, b, compatibility):
    """``b`` for a singular ``A`` whose rows and columns sum to zero (a pure Neumann matrix:
    x up to a constant): its mean removed with ``compatibility='project'``, else refused in
    the one-rank solve's words when not 0 (round 44 h4: over 2 ranks CG ran to maxiter with
    |r|/|b| = 6.6e4 and no word of why). Every rank holds A and b: all raise alike."""
    import scipy.sparse as sp

    from .rows import _rows_sum_zero

    A = sp.csr_matrix(A)   # a .npy matrix file is a dense array
    if np.iscomplexobj(b) or not _rows_sum_zero(A) or not _rows_sum_zero(A.T.tocsr()):
        return b
    mean = float(b.mean())
    if compatibility == "project":
        return b - mean
    if abs(mean) > 1e-10 * max(float(np.abs(b).max()), 1e-300):
        raise ValueError(
            f"the problem is singular (its rows and columns sum to zero, as a pure Neumann or "
            f"a graph Laplacian's do: x is defined up to a constant) and b is not compatible "
            f"(mean of b = {mean:.3e}, it must be 0: no x solves it); pass "
            f"compatibility='project' to remove the mean (--compatibility project)")
    return b


def rows_system(config: dict, reporter, comm=None):
    """The job's part on every rank before the solve: read the matrix (and B) files, split
    by rows over ``comm`` (None: MPI's world). Returns ``(solver, b, exact)``: without B,
    b = A 1 and ``exact`` the error's function (against the ones vector; where A 1 = 0,
    against ``x_e`` up to a constant, ``files.default_rhs``), else None;
    :func:`~..entry.run` solves and reports (``solve_and_report``: the convergence CSV,
    ``partial.npz`` when not converged, ``--save``; rank 0)."""
    from ..cancel import checking
    from ..files import load_near_nullspace, read_matrix, read_vector

    if comm is None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    A = read_matrix(config["problem"])
    n = int(A.shape[0])
    b = read_vector(config["b"], n) if config.get("b") is not None else None
    exact = None
    if b is None:   # b = A 1; where A 1 = 0 b = A x_e (round 44 h4: files.default_rhs)
        from ..files import default_rhs

        rhs, exact, line = default_rhs(A)
        if comm.Get_rank() == 0:
            reporter.log(line)
    elif b.ndim == 2 and b.shape[1] > 1:   # round 48 (h14): each column, one setup
        rhs = np.column_stack([_compatible(A, b[:, j], config.get("compatibility"))
                               for j in range(b.shape[1])])
    else:
        rhs = _compatible(A, np.asarray(b).ravel(), config.get("compatibility"))
    with checking(reporter):
        solver = RowJobSolver(A, method=config.get("method") or "auto",
                              precond=config.get("precond") or "auto", comm=comm,
                              restart=int(config.get("restart") or 30),
                              overlap=int(config.get("overlap") or 0),
                              reorder=config.get("reorder") or "auto",
                              coarse=config.get("coarse") or "auto",
                              schwarz=config.get("schwarz") or "auto",
                              ilut_options=config.get("ilut_options"),
                              near_nullspace=load_near_nullspace(config.get("near_nullspace")))
    reporter.info(problem=f"matrix {config['problem']}", unknowns=n, ranks=comm.Get_size(),
                  subdomains=solver.rows.subdomains())
    return solver, rhs, exact

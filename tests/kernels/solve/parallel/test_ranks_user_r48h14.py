"""Round 48 (h14): a user's systems over 2 ranks said what one process does not. A singular
Neumann matrix with b in its range (mean 0) whose x misses the tolerance was called "A is
likely singular with b outside its range" (one process: b is orthogonal to the known null
space, so A is nearly singular beyond it); a BiCGStab breakdown stopped the loop without a
word ("maxiter: 373 iterations reached (maxiter=500)", or a ZeroDivisionError for a zero
rhat.v) where one process and SciPy say breakdown (SciPy's info -10 / -11). Oracles: SciPy's
``bicgstab`` / ``spsolve``, the one-process ``skiff.solve`` / ``Solver``'s own wording.
Ranks are threads of one process (``thread_ranks.py``), the job's solver
(``RowJobSolver``: what ``--ranks 2`` runs)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

pytest.importorskip("mpi4py")

from skiff import solve  # noqa: E402
from skiff.kernels.solve.parallel.rows_job import RowJobSolver  # noqa: E402
from skiff.kernels.solve.solver import Solver  # noqa: E402

from ..test_solve_user_r48h6 import _checkerboard_neumann  # noqa: E402
from .thread_ranks import on_threads  # noqa: E402


def _two(A, b, **kw):
    """The Solution of rank 0 over 2 thread ranks (rank 1's is None)."""
    opts = {k: kw.pop(k) for k in ("method", "precond") if k in kw}

    def job(comm):
        return RowJobSolver(A, comm=comm, **opts).solve(b, **kw)

    got = on_threads(2, job)
    assert got[1] is None
    return got[0]


def test_neumann_b_in_range_is_not_called_outside_it_over_two_ranks():
    # the checkerboard of 1e-4 / 1e4 (cond ~1e8 at 8^3), rows and columns summing to 0, b
    # of mean 0: in A's range. Over 2 ranks CG + block AMG solves it: x = the LU's of A
    # grounded at one unknown, up to the constant (1e-5 of |x|: the one-process test's bound)
    A = _checkerboard_neumann(8, 2)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    b -= b.mean()
    ref = np.r_[0.0, spla.spsolve(sp.csc_matrix(A[1:, 1:]), b[1:])]
    assert np.linalg.norm(b - A @ ref) <= 1e-6 * np.linalg.norm(b)   # b is in the range
    sol = _two(A, b, method="cg", precond="amg", rtol=1e-8)
    assert sol.converged
    d = (sol.x - sol.x.mean()) - (ref - ref.mean())
    assert np.linalg.norm(d) <= 1e-5 * np.linalg.norm(ref - ref.mean())
    # BiCGStab + block ILU at rtol 1e-10 on the 8^3 checkerboard of 4^3 blocks: one process
    # stops at iteration 255, "bicgstab: diverged, the residual grew to 2.8e+04 times the
    # initial one ... the iterate with the smallest residual is returned"; over 2 ranks it
    # grew to |r|/|b| 2.6e12 by maxiter and returned that x. Now one process's words and its
    # best iterate (whatever rounding does on another CPU, x's |r|/|b| stays under 1)
    A4 = _checkerboard_neumann(8, 4)
    b4 = np.random.default_rng(0).standard_normal(A4.shape[0])
    b4 -= b4.mean()
    got = _two(A4, b4, method="bicgstab", precond="ilu", rtol=1e-10, maxiter=500)
    true = np.linalg.norm(b4 - A4 @ got.x) / np.linalg.norm(b4)
    assert true < 1.0 and abs(got.relative_residual - true) <= 1e-6 + 1e-3 * true, (
        true, got.status)
    if "diverged" in got.status:
        assert got.status.startswith("bicgstab: diverged, the residual grew to ") and (
            "the iterate with the smallest residual is returned; BiCGStab's residual is not "
            "minimised" in got.status), got.status
    # where the recurrence passes the tolerance and x misses it far (BiCGStab + block AMG at
    # rtol 1e-10 on the 12^3 one over 2 thread ranks with threaded BLAS: |r|/|b| 3e-2 after
    # 367 iterations; rounding's, so given here as such an ending): the job said "A is likely
    # singular with b outside its range"; now one process's words (Solver._near_null_remedy)
    # where b has mean 0, and still "outside its range" where it has not (no x solves it)
    from skiff.kernels.solve.parallel.rows import RowResult

    for precond in ("amg", "jacobi"):
        job = RowJobSolver(A, method="bicgstab", precond=precond)   # one rank (comm None)
        one = Solver(A, method="bicgstab", precond=precond)._near_null_remedy()
        for mean in (0.0, 1.0):
            job._b_orthogonal = mean == 0.0   # what solve(b) finds of b
            res = RowResult(np.zeros(A.shape[0]), [10.0, 5e-10], 1, True, 0.3, 10.0, 1e-9)
            got = job._solution(ref, res, 0.0, 0, 500, None)
            assert not got.converged and got.status.startswith(
                "attainable accuracy: the solver's residual passed the tolerance 1.0e-10 but "
                "the true |b - Ax|/|b| is 3.0e-02, far above what rounding leaves"), got.status
            if mean == 0.0:
                assert got.status.endswith(f"leaves; {one}"), got.status
                assert "outside its range" not in got.status
            else:
                assert "b outside its range" in got.status


def test_bicgstab_breakdown_over_two_ranks_says_so_as_one_process_and_scipy():
    # a skew-symmetric A and an integer b: rhat.v = b^T A b = 0 exactly at iteration 1 on
    # any CPU (integer sums); SciPy's bicgstab returns info -11, one process says breakdown
    # naming GMRES. Over 2 ranks: alpha = rho / 0 (a ZeroDivisionError traceback)
    n = 40
    A = sp.diags([-1.0, 1.0], [-1, 1], shape=(n, n)).tocsr()   # nonsingular (n even)
    b = np.random.default_rng(0).integers(-3, 4, n).astype(float)
    _, info = spla.bicgstab(A, b, rtol=1e-8)
    one = solve(A, b, method="bicgstab", precond="none", rtol=1e-8)
    two = _two(A, b, method="bicgstab", precond="none", rtol=1e-8, maxiter=200)
    assert info == one.breakdown == two.breakdown == -11
    assert not two.converged and two.status == one.status, (two.status, one.status)
    assert two.status.startswith("breakdown: bicgstab: breakdown, rhat.v") and (
        "method='gmres'" in two.status)
    # the remedy it names: GMRES over the ranks, x = spsolve's (cond(A) ~ n: 1e-6 of |x|
    # is 100x over what rtol 1e-8 leaves)
    x = spla.spsolve(A.tocsc(), b)
    good = _two(A, b, method="gmres", precond="none", rtol=1e-8)
    assert good.converged
    assert np.abs(good.x - x).max() <= 1e-6 * np.abs(x).max()


def test_a_matrix_market_file_with_three_right_hand_sides_x0_and_a_cancel_over_two_ranks(
        tmp_path):
    # a user's nonsymmetric matrix (convection, unknowns shuffled) and B of 3 columns as
    # Matrix Market files, read by the job on each rank (rows_system): it refused B ("drop
    # --np for several") where one process solves each column. GMRES and BiCGStab over 2
    # ranks against SciPy's on one process at the same rtol of |b| (x within 1e-6 of
    # spsolve's: rtol 1e-10 times cond ~1e2, 1e4 of margin), an (n, 3) x0, and a cancel in
    # the second column that keeps (n, 3) (the first column's x, the second's iterate, the
    # third's x0) from which a warm start converges with fewer iterations than from x0
    import scipy.io

    from skiff.kernels.backend.report import JobCancelled
    from skiff.kernels.solve.parallel.rows_job import rows_system

    from .test_rows_job_r39h11 import _Reporter
    from .thread_ranks import shuffled_laplacian

    A = shuffled_laplacian(16, convect=0.8)
    n = A.shape[0]
    rng = np.random.default_rng(3)
    B, X0 = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
    scipy.io.mmwrite(str(tmp_path / "A.mtx"), A)
    scipy.io.mmwrite(str(tmp_path / "B.mtx"), B)
    X = spla.spsolve(A.tocsc(), B)
    for method, fn in (("gmres", spla.gmres), ("bicgstab", spla.bicgstab)):
        config = {"problem": str(tmp_path / "A.mtx"), "b": str(tmp_path / "B.mtx"),
                  "method": method, "precond": "ilu"}

        def job(comm, stop_at=None, x0=X0, config=config):
            rep = _Reporter(comm.Get_rank(), stop_at if comm.Get_rank() == 0 else None)
            solver, rhs, _ = rows_system(config, rep, comm)
            return solver.solve(rhs, x0=x0, rtol=1e-10, reporter=rep)

        sol, other = on_threads(2, job)
        assert other is None and sol.x.shape == (n, 3) and sol.converged, sol.status
        assert sol.info["columns"] == 3 and sol.info["ranks"] == 2
        for j in range(3):
            xs, info = fn(A, B[:, j], x0=X0[:, j], rtol=1e-10, maxiter=2000)
            assert info == 0
            # converged: the true |b - Ax| within rtol (10x of margin for another CPU)
            assert np.linalg.norm(B[:, j] - A @ sol.x[:, j]) <= 1e-9 * np.linalg.norm(B[:, j])
            assert np.abs(sol.x[:, j] - X[:, j]).max() <= 1e-6 * np.abs(X[:, j]).max()
            assert np.abs(xs - X[:, j]).max() <= 1e-6 * np.abs(X[:, j]).max()
    # a cancel at the second column's 3rd iteration (BiCGStab's job): both ranks stop, rank
    # 0 keeps (n, 3); the reporter's step restarts with each column
    class Cancel(_Reporter):
        def should_stop(self):
            starts = [s for name, _, s in self.metrics if name == "residual" and s == 1]
            return len(starts) >= 2 and self.step >= 3

    def cancelled(comm):
        rep = Cancel(comm.Get_rank()) if comm.Get_rank() == 0 else _Reporter(1)
        solver, rhs, _ = rows_system(config, rep, comm)
        return solver.solve(rhs, x0=X0, rtol=1e-10, reporter=rep)

    stopped = on_threads(2, cancelled, outcomes=True)
    assert all(isinstance(e, JobCancelled) for e in stopped), stopped
    kept = stopped[0].arrays["x"]
    assert kept.shape == (n, 3) and int(stopped[0].arrays["columns_done"]) == 1
    assert np.abs(kept[:, 0] - X[:, 0]).max() <= 1e-6 * np.abs(X[:, 0]).max()
    assert np.array_equal(kept[:, 2], X0[:, 2])
    assert stopped[0].partial["column_iterations"][1] == 3
    # resumed from what was kept (jobs resume / --x0 RUN/partial.npz): every column solved,
    # the finished one in fewer iterations than from X0
    again = on_threads(2, lambda comm: job(comm, x0=kept))[0]
    assert again.converged and np.abs(again.x - X).max() <= 1e-6 * np.abs(X).max()
    assert again.info["column_iterations"][0] < sol.info["column_iterations"][0]


def test_cg_over_two_ranks_stops_where_p_ap_is_rounding_as_one_process():
    # a 16^2 Neumann Laplacian (the constant its null space) and b of mean != 0: no x solves
    # it (least squares leaves |b - Ax|/|b| = |mean| sqrt(n) / |b|); SciPy's cg does not
    # converge. One process's CG stops on p.Ap < 0 of rounding's size ("b has a part outside
    # its range"); over 2 ranks it went on to maxiter. Now both ranks raise its words; where
    # b has mean 0 (in the range) the job says the tolerance instead (one process's h6 words)
    from skiff.kernels.solve.krylov import SolveError

    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(16, 16)).tolil()
    T[0, 0] = T[-1, -1] = 1.0
    A = sp.csr_matrix(sp.kronsum(T.tocsr(), T.tocsr()))
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    ls = abs(b.mean()) * np.sqrt(b.size) / np.linalg.norm(b)
    assert ls > 1e-3 and spla.cg(A, b, rtol=1e-8, maxiter=400)[1] != 0

    def job(comm):
        return RowJobSolver(A, method="cg", precond="none", comm=comm).solve(
            b, rtol=1e-8, maxiter=400)

    out = on_threads(2, job, outcomes=True)
    assert all(isinstance(e, SolveError) for e in out), out
    assert str(out[0]) == str(out[1])
    assert "is rounding's size against A's scale" in str(out[0]) and (
        "b has a part outside its range, so no x solves it" in str(out[0])), str(out[0])
    s = RowJobSolver(A, method="cg", precond="none")
    s._b_orthogonal = True   # what solve(b) finds of a b of mean 0
    said = str(s._not_positive(str(out[0])))
    assert "outside its range" not in said and said.endswith(
        Solver(A, method="cg", precond="none")._near_null_remedy(rounding=True))

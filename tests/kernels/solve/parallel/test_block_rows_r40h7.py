"""Round 40 (h7): block Jacobi over the ranks of a row split (``parallel/block_local.py``):
``row_solve(A, b, precond='ilu' | 'amg')`` preconditions each rank with ILU(0) (IC(0) on a
symmetric block) or a smoothed-aggregation V-cycle of its own diagonal block, as PETSc's
``-pc_type bjacobi`` users expect; ``solve A.mtx --np 2 --precond amg`` takes it (it was
refused). Oracles: ILU(0)'s defining property (``(L U)_ij = a_ij`` on A's pattern) and a
dense textbook ILU(0); SciPy's ``spsolve``; SciPy's ``cg`` with the same block-diagonal
preconditioner (the residual histories). Ranks are threads (``thread_ranks.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.block_local import ILU0
from skiff.kernels.solve.parallel.rows import RowSolver, row_ranges, row_solve

from ..ilu_reference import dense_ilu0
from .thread_ranks import on_threads

pytest.importorskip("mpi4py")


def _laplacian(n, eps=1.0):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), T) + eps * sp.kron(T, sp.eye(n))).tocsr()


def _convection(n, c=20.0):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    U = sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n))
    return (sp.kronsum(T, T) + c / n * (sp.kron(sp.eye(n), U) + sp.kron(U, sp.eye(n)))).tocsr()


def _factors(f: ILU0):
    F = sp.csr_matrix((f.data, f.indices, f.indptr), shape=(f.n, f.n)).toarray()
    return np.tril(F, -1) + np.eye(f.n), np.triu(F)


@pytest.mark.parametrize("which", ["symmetric", "convection"])
def test_ilu0_is_the_incomplete_lu_on_the_pattern(which):
    rng = np.random.default_rng(0)
    A = _laplacian(7) if which == "symmetric" else _convection(7, 60.0)
    A = (A + sp.diags(rng.uniform(0, 0.5, A.shape[0]))).tocsr()
    f = ILU0(A)
    L, U = _factors(f)
    pattern = A.toarray() != 0
    assert np.allclose((L @ U)[pattern], A.toarray()[pattern], rtol=0, atol=1e-12)
    assert np.allclose(np.tril(L, -1) + U, dense_ilu0(A), rtol=0, atol=1e-12)
    r = rng.standard_normal(A.shape[0])
    assert np.allclose(f.solve(r), np.linalg.solve(L @ U, r), rtol=1e-12, atol=1e-12)
    if which == "symmetric":   # IC(0) in L D L^T form: CG may take it
        assert np.allclose(U, np.diag(np.diag(U)) @ L.T, rtol=0, atol=1e-12)


def test_a_tridiagonal_ilu0_is_the_exact_lu():
    A = sp.diags([-1.0, 2.5, -1.2], [-1, 0, 1], shape=(50, 50)).tocsr()
    b = np.arange(50.0)
    assert np.allclose(ILU0(A).solve(b), spla.spsolve(A.tocsc(), b), rtol=1e-12, atol=1e-12)


def _history_scipy_cg(A, b, Minv, rtol):
    res = [np.linalg.norm(b)]
    spla.cg(A, b, rtol=rtol, maxiter=500, M=spla.LinearOperator(A.shape, matvec=Minv),
            callback=lambda xk: res.append(np.linalg.norm(b - A @ xk)))
    return np.array(res)


def test_block_ic0_cg_over_two_ranks_is_scipys_cg_with_the_block_diagonal_m():
    A = _laplacian(24, eps=0.05)   # anisotropic: Jacobi takes many iterations
    n = A.shape[0]
    b = np.random.default_rng(3).standard_normal(n)
    ranges = row_ranges(n, 2)
    blocks = [ILU0(A[lo:hi, lo:hi]) for lo, hi in ranges]

    def Minv(r):
        return np.concatenate([f.solve(r[lo:hi]) for f, (lo, hi) in zip(blocks, ranges)])

    ref = _history_scipy_cg(A, b, Minv, 1e-10)
    got = on_threads(2, lambda comm: RowSolver(A, method="cg", precond="ic0", comm=comm)
                     .iterate(b, rtol=1e-10))
    hist = np.array(got[0].history)
    assert got[0].converged and got[1].converged and hist.size == ref.size
    assert np.allclose(hist, ref, rtol=1e-5, atol=0)   # recurrence vs true: 1e-6 at 1e-9
    jac = on_threads(2, lambda comm: RowSolver(A, method="cg", comm=comm).iterate(b, rtol=1e-10))
    assert got[0].iterations * 3 <= jac[0].iterations, (got[0].iterations, jac[0].iterations)


@pytest.mark.parametrize("method,precond", [("cg", "amg"), ("bicgstab", "ilu"),
                                            ("gmres", "ilu"), ("bicgstab", "amg")])
def test_block_preconditioned_row_solve_is_spsolves(method, precond):
    A = _laplacian(30) if method == "cg" else _convection(30)
    b = np.random.default_rng(4).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    out = on_threads(2, lambda comm: row_solve(A, b, method=method, precond=precond,
                                               rtol=1e-10, comm=comm, restart=20))
    jac = on_threads(2, lambda comm: RowSolver(A, method=method, comm=comm, restart=20)
                     .iterate(b, rtol=1e-10))
    blk = on_threads(2, lambda comm: RowSolver(A, method=method, precond=precond, comm=comm,
                                               restart=20).iterate(b, rtol=1e-10))
    for x, info in out:
        assert info == 0 and np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)
    inner = [len(r.history) - 1 for r in (jac[0], blk[0])]   # GMRES: inner iterations
    assert inner[1] * 2 <= inner[0], inner


def test_a_zero_pivot_on_one_rank_is_one_line_on_every_rank():
    A = _laplacian(6).tolil()
    A[30, 30] = 0.0   # rank 1's rows: 18..35
    A = A.tocsr()
    A.eliminate_zeros()
    out = on_threads(2, lambda comm: _raises(lambda: RowSolver(A, precond="ilu", comm=comm)))
    for msg in out:
        assert "row_solve: precond='ilu' on rank 1's block: row 12 has no diagonal entry" in msg
        assert "\n" not in msg
    with pytest.raises(ValueError, match="precond='lu'.*'ilu': block Jacobi"):
        RowSolver(A, precond="lu")


def _raises(fn):
    try:
        fn()
    except ValueError as exc:
        return str(exc)
    return "no error"


def test_the_job_takes_precond_amg_over_ranks():
    """``solve A.npz --np 2 --precond amg`` was refused ("not split by rows")."""
    from skiff.kernels.solve.parallel.rows_job import RowJobSolver, check_row_split

    check_row_split("cg", "amg", 2)
    A = _laplacian(20)
    b = np.ones(A.shape[0])
    sols = on_threads(2, lambda comm: RowJobSolver(A, precond="amg", comm=comm).solve(
        b, rtol=1e-9))
    sol = sols[0]
    assert sols[1] is None and sol.converged and sol.precond == "amg"
    assert np.linalg.norm(b - A @ sol.field.ravel()) <= 1e-9 * np.linalg.norm(b)
    assert "cg + block amg on 2 ranks by rows" in sol.info["solver"]
    # --precond auto takes block AMG where the diagonal is positive (one rank's auto: AMG)
    auto = on_threads(2, lambda comm: RowJobSolver(A, comm=comm).solve(b, rtol=1e-9))[0]
    jac = on_threads(2, lambda comm: RowJobSolver(A, precond="jacobi", comm=comm).solve(
        b, rtol=1e-9))[0]
    assert auto.precond == "amg" and auto.iterations == sol.iterations
    assert auto.iterations * 2 <= jac.iterations, (auto.iterations, jac.iterations)


@pytest.mark.parametrize("method", ["cg", "gmres"])
def test_overlap_1_is_additive_schwarz_over_the_ghosts_rows(method):
    """``overlap=1`` (PETSc's asm): each rank's block grown by its ghosts' rows, ILU(0) of
    it; for CG the ghosts' part is added back at their owners (symmetric: ``sum_i R_i^T
    (L_i U_i)^-1 R_i``), else dropped (restricted). Oracle: that sum formed densely from the
    textbook ILU(0) of each grown block."""
    A = _laplacian(8, eps=0.3) if method == "cg" else _convection(8, 40.0)
    n = A.shape[0]
    ranges = row_ranges(n, 2)
    V = np.random.default_rng(5).standard_normal((n, 3))
    ref = np.zeros_like(V)
    for lo, hi in ranges:
        cols = np.unique(A[lo:hi].indices)
        idx = np.concatenate([np.arange(lo, hi), cols[(cols < lo) | (cols >= hi)]])
        F = dense_ilu0(A[idx][:, idx])
        z = np.linalg.solve((np.tril(F, -1) + np.eye(idx.size)) @ np.triu(F), V[idx])
        keep = idx.size if method == "cg" else hi - lo
        ref[idx[:keep]] += z[:keep]

    def applied(comm):
        s = RowSolver(A, method=method, precond="ilu", overlap=1, comm=comm)
        lo, hi = s.plan.lo, s.plan.hi
        return np.stack([s.M(V[lo:hi, j]) for j in range(V.shape[1])], axis=1)

    got = np.concatenate(on_threads(2, applied))
    assert np.allclose(got, ref, rtol=1e-10, atol=1e-12)
    if method == "cg":   # the sum of symmetric pieces is symmetric
        assert np.allclose(V.T @ got, (V.T @ got).T, rtol=1e-10, atol=1e-10)


def test_overlap_with_amg_cuts_the_iterations_and_solves():
    A = _convection(32)
    b = np.random.default_rng(6).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    its = []
    for overlap in (0, 1):
        out = on_threads(2, lambda comm, ov=overlap: RowSolver(
            A, method="bicgstab", precond="amg", overlap=ov, comm=comm).iterate(b, rtol=1e-10))
        its.append(out[0].iterations)
    x, info = on_threads(2, lambda comm: row_solve(A, b, method="bicgstab", precond="amg",
                                                   overlap=1, rtol=1e-10, comm=comm))[0]
    assert info == 0 and np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)
    assert its[1] < its[0], its
    with pytest.raises(ValueError, match="overlap=5; 0 .block Jacobi. or 1 to 4"):
        RowSolver(A, precond="amg", overlap=5)   # round 41: up to 4 layers


def test_a_zero_diagonal_in_one_ranks_rows_is_said_by_every_rank():
    """Jacobi's refusal came from the rank whose rows held the zero only; rank 0 went on
    into the first sum and waited there (under ``mpirun`` until the job was killed)."""
    A = _laplacian(6).tolil()
    A[30, 30] = 0.0   # rank 1's rows
    A = A.tocsr()
    A.eliminate_zeros()
    out = on_threads(2, lambda comm: RowSolver(A, comm=comm), outcomes=True)
    for exc in out:
        assert isinstance(exc, ValueError), exc
        assert "a zero on the diagonal (row 30; Jacobi divides by it)" in str(exc)


def test_a_block_setup_failing_on_one_rank_is_said_on_all_and_auto_takes_jacobi(monkeypatch):
    """A failure injected in rank 1's block setup (any exception, not only a zero pivot):
    every rank raises the same line (none is left in a collective), and the job's
    ``--precond auto`` goes on with Jacobi on every rank."""
    from skiff.kernels.solve.parallel import block_local
    from skiff.kernels.solve.parallel.rows_job import RowJobSolver

    real = block_local.block_preconditioner

    def failing(block, kind, rank=0, *more):   # more: the whole matrix's contrast (r44)
        if rank == 1:
            raise RuntimeError("no memory for the hierarchy")
        return real(block, kind, rank, *more)

    monkeypatch.setattr(block_local, "block_preconditioner", failing)
    A = _laplacian(10)
    out = on_threads(2, lambda comm: RowSolver(A, precond="amg", comm=comm), outcomes=True)
    for exc in out:
        assert isinstance(exc, ValueError) and str(exc) == (
            "row_solve: precond='amg' on rank 1's block: RuntimeError: no memory for the "
            "hierarchy")
    b = np.ones(A.shape[0])
    sols = on_threads(2, lambda comm: RowJobSolver(A, comm=comm).solve(b, rtol=1e-9))
    assert sols[0].precond == "jacobi" and sols[0].converged

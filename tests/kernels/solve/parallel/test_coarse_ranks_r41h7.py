"""Round 41 (h7): a coarse level across the ranks of the row split (``parallel/coarse.py``)
and additive Schwarz with more than one layer of overlap, on ranks as threads."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.ilu0 import ILU0
from skiff.kernels.solve.parallel.rows import RowSolver, row_ranges, row_solve

from .thread_ranks import on_threads


def _poisson(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.csr_matrix(sp.kronsum(T, T))


def _convection(n, c=20.0):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    U = sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n))
    return sp.csr_matrix(sp.kronsum(T, T) + c / n * (sp.kron(sp.eye(n), U) + sp.kron(U, sp.eye(n))))


@pytest.fixture(scope="module")
def poisson():
    A = _poisson(30)   # 450 rows a rank on 2: each block's AMG has a coarse grid
    return A, np.random.default_rng(0).standard_normal(A.shape[0])


def test_the_coarse_solve_is_p_times_the_galerkin_inverse_times_p_transpose(poisson):
    """``Q r = P (P^T A P)^-1 P^T r`` with P the ranks' bases side by side (dense oracle)."""
    A, _ = poisson
    V = np.random.default_rng(1).standard_normal((A.shape[0], 3))

    def run(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="none")
        from skiff.kernels.solve.parallel.block_local import own_block
        from skiff.kernels.solve.parallel.coarse import CoarseLevel, coarse_basis

        m = s.plan.hi - s.plan.lo
        P = coarse_basis(own_block(s.plan.local, m), "aggregates", m)
        Q = CoarseLevel(s.op, P, comm)
        lo, hi = s.plan.lo, s.plan.hi
        return P.toarray(), np.stack([Q(V[lo:hi, j]) for j in range(V.shape[1])], axis=1)

    out = on_threads(2, run)
    bases = [p for p, _ in out]
    assert all(0 < b.shape[1] <= 400 for b in bases)
    P = np.zeros((A.shape[0], sum(b.shape[1] for b in bases)))
    r0 = c0 = 0
    for b in bases:
        P[r0:r0 + b.shape[0], c0:c0 + b.shape[1]] = b
        r0, c0 = r0 + b.shape[0], c0 + b.shape[1]
    Ad = A.toarray()
    ref = P @ np.linalg.solve(P.T @ Ad @ P, P.T @ V)
    got = np.concatenate([q for _, q in out])
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-11 * np.abs(ref).max())
    # an A-orthogonal projection: Q A P = P
    assert np.allclose(P.T @ Ad @ (ref - np.linalg.solve(Ad, V)), 0, atol=1e-8)


@pytest.mark.parametrize("precond", ["amg", "ilu"])
def test_the_coarse_level_cuts_block_iterations_over_four_ranks(poisson, precond):
    """Block AMG / ILU(0) lose iterations as ranks are added (no coarse level across them);
    with the ranks' coarsest grids gathered CG takes at most half, and solves."""
    A, b = poisson
    ref = spla.spsolve(A.tocsc(), b)
    its = {}
    for coarse in ("none", "aggregates"):
        def run(comm, c=coarse):
            solver = RowSolver(A, method="cg", precond=precond, comm=comm, coarse=c)
            return solver, solver.iterate(b, rtol=1e-9)

        out = on_threads(4, run)
        s, res = out[0]
        its[coarse] = res.iterations
        assert all(r.converged for _, r in out)
        x = np.concatenate([r.x for _, r in out])
        assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
        if coarse == "aggregates":
            assert s.coarse_size > 4 and s.coarse == "aggregates"
    assert 2 * its["aggregates"] <= its["none"], its


def test_block_amg_takes_the_coarse_level_by_default_and_ilu_does_not(poisson):
    A, _ = poisson
    s_amg, s_ilu = on_threads(2, lambda comm: (
        RowSolver(A, precond="amg", comm=comm), RowSolver(A, precond="ilu", comm=comm)))[0]
    assert s_amg.coarse == "amg" and s_amg.coarse_size > 2
    assert s_ilu.coarse == "none" and s_ilu.coarse_size == 0


@pytest.mark.parametrize("method", ["bicgstab", "gmres"])
def test_nonsymmetric_methods_with_the_coarse_level_solve(method):
    A = _convection(30)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    its = {}
    for coarse in ("none", "aggregates"):
        x, info = on_threads(2, lambda comm, c=coarse: row_solve(
            A, b, method=method, precond="ilu", coarse=c, rtol=1e-10, comm=comm,
            callback=lambda it, rn, xl: its.__setitem__(c, it)))[0]
        assert info == 0 and np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)
    assert its["aggregates"] < its["none"], its


def _grown(A, lo, hi, k):
    """The rows within k steps of [lo, hi) in A's graph: the pattern of (|A| + I)^k."""
    G = (abs(A) + abs(A.T) + sp.eye(A.shape[0])).tocsr()
    G.data[:] = 1.0
    S = sp.identity(A.shape[0], format="csr")
    for _ in range(k):
        S = (S @ G).tocsr()
        S.data[:] = 1.0
    reach = np.flatnonzero(np.asarray(S[lo:hi].sum(axis=0)).ravel())
    return np.concatenate([np.arange(lo, hi), reach[(reach < lo) | (reach >= hi)]])


@pytest.mark.parametrize("method", ["cg", "bicgstab"])
def test_overlap_two_is_the_sum_of_ilu_solves_on_two_layer_blocks(method):
    """PETSc's ``asm`` with ``-pc_asm_overlap 2``: ``sum_i R_i^T (L_i U_i)^-1 R_i`` (CG,
    basic) or its restricted form (BiCGStab: each rank keeps its own rows), the blocks
    the rows within two steps of each rank's rows."""
    A = _poisson(12) if method == "cg" else _convection(12)
    n, size = A.shape[0], 3
    V = np.random.default_rng(3).standard_normal((n, 4))
    ref = np.zeros_like(V)
    for lo, hi in row_ranges(n, size):
        idx = _grown(A, lo, hi, 2)
        assert idx.size >= (hi - lo) + 2 * 12   # two grid lines on a side at least
        solve = ILU0(A[idx][:, idx].tocsr(), "ref").solve
        Z = np.stack([solve(V[idx, j]) for j in range(V.shape[1])], axis=1)
        if method == "cg":
            ref[idx] += Z
        else:
            ref[lo:hi] += Z[:hi - lo]

    def applied(comm):
        s = RowSolver(A, method=method, precond="ilu", overlap=2, comm=comm)
        lo, hi = s.plan.lo, s.plan.hi
        return np.stack([s.M(V[lo:hi, j]) for j in range(V.shape[1])], axis=1)

    got = np.concatenate(on_threads(size, applied))
    assert np.allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_overlap_two_cuts_block_amg_iterations_and_solves(poisson):
    A, b = poisson
    ref = spla.spsolve(A.tocsc(), b)
    its = []
    for ov in (1, 2):
        res = on_threads(2, lambda comm, o=ov: RowSolver(
            A, method="cg", precond="amg", overlap=o, coarse="none", comm=comm).iterate(
                b, rtol=1e-9))
        its.append(res[0].iterations)
        x = np.concatenate([r.x for r in res])
        assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert its[1] < its[0], its


def test_refusals_and_a_singular_coarse_problem():
    A = _poisson(8)
    with pytest.raises(ValueError, match="coarse='multigrid'; 'auto', 'aggregates'"):
        RowSolver(A, precond="amg", coarse="multigrid")
    with pytest.raises(ValueError, match="give precond='amg' or 'ilu'"):
        RowSolver(A, precond="jacobi", coarse="ranks")
    with pytest.raises(ValueError, match="overlap=True"):
        RowSolver(A, precond="ilu", overlap=True)
    # a pure Neumann Laplacian (the constant in its null space) regularised on the diagonal
    # of its blocks only: the Galerkin coarse problem with one aggregate a rank is singular
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(8, 8)).tolil()
    T[0, 0] = T[7, 7] = 1.0
    L = sp.csr_matrix(sp.kronsum(T.tocsr(), T.tocsr()))
    outs = on_threads(2, lambda comm: RowSolver(L + 1e-3 * sp.eye(64), precond="ilu",
                                                coarse="ranks", comm=comm).coarse_size)
    assert outs == [2, 2]
    # L itself (A 1 = 0): its singular coarse problem is shifted as one rank's coarsest level
    # is (round 44 h4; refused before): CG solves a compatible b, x up to a constant
    b = np.random.default_rng(0).standard_normal(64)
    b -= b.mean()

    def neumann(comm):
        s = RowSolver(L, precond="amg", coarse="ranks", comm=comm)
        r = s.iterate(b, rtol=1e-10, maxiter=100)
        return r.converged, s.coarse_size, s.gather(r.x)

    ok, size, x = on_threads(2, neumann)[0]
    ref = np.linalg.lstsq(L.toarray(), b, rcond=None)[0]
    assert ok and size == 2
    assert np.abs((x - x.mean()) - (ref - ref.mean())).max() <= 1e-6 * np.abs(ref).max()
    # a null vector that is not the constant (D L D, D constant on each rank's rows: D^-1 1
    # is in the coarse space, A 1 != 0): still refused in one line
    D = sp.diags(np.r_[np.ones(32), 2.0 * np.ones(32)])
    errs = on_threads(2, lambda comm: RowSolver(sp.csr_matrix(D @ L @ D), precond="amg",
                                                coarse="ranks", comm=comm), outcomes=True)
    assert all(isinstance(e, ValueError) and "coarse problem across the ranks" in str(e)
               and "coarse='none'" in str(e) for e in errs), errs
    # blocks under 400 rows are solved whole by their AMG: auto adds no coarse level
    auto = on_threads(2, lambda comm: RowSolver(L, precond="amg", comm=comm))
    assert all(s.coarse == "none" and s.coarse_size == 0 for s in auto)


def test_the_job_says_its_coarse_level_and_takes_coarse_and_overlap_2(poisson):
    """The job (``solve A.npz --np 2 --precond amg``) runs the two-level method and says so;
    ``--coarse`` / ``--overlap 2`` reach the row solver; ``--coarse`` with Jacobi is one
    line."""
    from skiff.kernels.solve.parallel.rows_job import RowJobSolver, check_row_split

    A, b = poisson
    sols = on_threads(2, lambda comm: RowJobSolver(A, precond="amg", comm=comm).solve(
        b, rtol=1e-9))
    sol = sols[0]
    assert sol.converged and np.linalg.norm(b - A @ sol.field.ravel()) <= 1e-9 * np.linalg.norm(b)
    assert "cg + block amg on 2 ranks by rows, a coarse level of" in sol.info["solver"]
    ilu = on_threads(2, lambda comm: RowJobSolver(A, precond="ilu", overlap=2,
                                                  coarse="aggregates", comm=comm))[0]
    assert ilu.rows.coarse == "aggregates" and ilu.rows.overlap == 2
    assert "overlap-2 schwarz ilu" in ilu.describe() and "a coarse level of" in ilu.describe()
    with pytest.raises(ValueError, match="--coarse ranks adds a coarse level .* and the "
                                         "preconditioner is jacobi: give --precond amg"):
        check_row_split("cg", "jacobi", 2, coarse="ranks")

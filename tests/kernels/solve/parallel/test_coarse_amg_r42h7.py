"""Round 42 (h7): ``coarse='amg'`` over the ranks of a row split (``parallel/coarse.py``):
each rank's first AMG level, smoothed with the whole A across the ranks' boundary, gathered
and solved by an AMG V-cycle; block AMG's default up to 8 ranks. Ranks as threads."""

from __future__ import annotations

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel import rows
from skiff.kernels.solve.parallel.rows import RowSolver, row_solve

from .thread_ranks import on_threads


def _poisson(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.csr_matrix(sp.kronsum(T, T))


@pytest.fixture(scope="module")
def poisson():
    A = _poisson(64)   # 1024 rows a rank on 4, about 460 gathered coarse unknowns
    return A, np.random.default_rng(0).standard_normal(A.shape[0])


def test_cg_over_four_ranks_takes_one_rank_pyamgs_iterations(poisson):
    """Round 41's coarsest grids gathered left CG at 2-3x one rank's AMG iterations; the
    first levels smoothed across the ranks and gathered take about pyamg's own on one rank
    (``accel='cg'``), and give ``spsolve``'s x."""
    A, b = poisson
    res = []
    pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-9, accel="cg", residuals=res)
    ref = spla.spsolve(A.tocsc(), b)
    its = {}
    for coarse in ("aggregates", "amg"):
        def run(comm, c=coarse):
            solver = RowSolver(A, method="cg", precond="amg", comm=comm, coarse=c)
            return solver, solver.iterate(b, rtol=1e-9)

        out = on_threads(4, run)
        s, r = out[0]
        its[coarse] = r.iterations
        assert all(r.converged for _, r in out) and s.coarse == coarse
        if coarse == "amg":   # over 400 gathered unknowns: an AMG V-cycle of them, not an LU
            assert s.coarse_size > 400 and s.coarse_level.amg is not None
        x = np.concatenate([r.x for _, r in out])
        assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert its["amg"] <= len(res) - 1 + 3, (its, len(res) - 1)
    assert 3 * its["amg"] <= 2 * its["aggregates"], its


def test_the_coarse_problem_is_the_galerkin_product_of_the_smoothed_basis():
    """Each rank's basis column is ``(I - w D^-1 A) t`` with ``t`` the normalized indicator of
    one of its aggregates, A the whole matrix (reaching the neighbour rank's rows) and ``w``
    the same on every rank (4/3 over the larger block estimate of rho(D^-1 A)), and
    the gathered coarse matrix is ``P^T A P`` (dense oracle)."""
    A = _poisson(40)

    def run(comm):
        s = RowSolver(A, method="cg", precond="amg", comm=comm, coarse="none")
        from skiff.kernels.solve.parallel.block_local import own_block
        from skiff.kernels.solve.parallel.coarse import CoarseLevel, coarse_basis

        m = s.plan.hi - s.plan.lo
        T, w = coarse_basis(own_block(s.plan.local, m), "amg", m)
        Q = CoarseLevel(s.op, (T, w), comm, cycle=True)
        return T.toarray(), Q.omega, Q.P.toarray(), Q.Ac.toarray(), Q.amg is not None

    out = on_threads(2, run)
    Ts = [o[0] for o in out]
    N = sum(t.shape[1] for t in Ts)
    T = np.zeros((A.shape[0], N))
    r0 = c0 = 0
    for t in Ts:
        assert np.allclose((t > 0).sum(axis=1) <= 1, True) and np.allclose((t ** 2).sum(0), 1)
        T[r0:r0 + t.shape[0], c0:c0 + t.shape[1]] = t
        r0, c0 = r0 + t.shape[0], c0 + t.shape[1]
    Ad = A.toarray()
    w = out[0][1]
    lam = spla.eigsh(sp.diags(1 / A.diagonal()) @ A, k=1, which="LA",
                     return_eigenvectors=False)[0]
    assert w == out[1][1] and 4 / 3 / (1.15 * lam) <= w <= 4 / 3 / (0.9 * lam), (w, lam)
    P = T - w * (Ad / np.diag(Ad)[:, None]) @ T
    got = np.concatenate([o[2] for o in out])
    assert np.allclose(got, P, atol=1e-12)
    assert np.allclose(out[0][3], P.T @ Ad @ P, atol=1e-10) and np.allclose(out[1][3], out[0][3])
    assert not out[0][4]   # 400 coarse unknowns or fewer: solved exactly (LU)


@pytest.mark.parametrize("method", ["bicgstab", "gmres"])
def test_nonsymmetric_methods_with_coarse_amg(method):
    n, c = 40, 20.0
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    U = sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n))
    A = sp.csr_matrix(sp.kronsum(T, T) + c / n * (sp.kron(sp.eye(n), U) + sp.kron(U, sp.eye(n))))
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    its = {}
    for coarse in ("aggregates", "amg"):
        x, info = on_threads(2, lambda comm, co=coarse: row_solve(
            A, b, method=method, precond="amg", coarse=co, rtol=1e-10, comm=comm,
            callback=lambda it, rn, xl: its.__setitem__(co, it)))[0]
        assert info == 0 and np.linalg.norm(x - ref) <= 1e-8 * np.linalg.norm(ref)
    assert its["amg"] < its["aggregates"], its


def test_auto_takes_amg_up_to_eight_ranks_then_the_coarsest_grids(poisson, monkeypatch):
    A, b = poisson
    s = on_threads(2, lambda comm: RowSolver(A, precond="amg", comm=comm))[0]
    assert s.coarse == "amg" and s.coarse_size > 400
    monkeypatch.setattr(rows, "AUTO_AMG_RANKS", 1)
    s = on_threads(2, lambda comm: RowSolver(A, precond="amg", comm=comm))[0]
    assert s.coarse == "aggregates" and 2 < s.coarse_size <= 800
    ilu = on_threads(2, lambda comm: RowSolver(A, precond="ilu", comm=comm, coarse="amg"))
    assert ilu[0].coarse == "amg" and ilu[0].coarse_size > 400


def test_the_job_says_its_coarse_amg(poisson):
    from skiff.kernels.solve.parallel.rows_job import RowJobSolver
    from skiff.kinds import KINDS

    A, b = poisson   # round 42 (h14): with --overlap 1, which auto's AMG coarse level dropped
    # until round 47 (h13): CG with an overlap now runs block Jacobi's V-cycle, no worse
    sol = on_threads(2, lambda comm: RowJobSolver(A, precond="amg", overlap=1, comm=comm)
                     .solve(b, rtol=1e-9))[0]
    assert sol.converged and np.linalg.norm(b - A @ sol.field.ravel()) <= 1e-9 * np.linalg.norm(b)
    assert "a coarse level of" in sol.info["solver"], sol.info["solver"]
    assert "(an AMG V-cycle of it)" in sol.info["solver"], sol.info["solver"]
    assert "overlap-1 schwarz amg" in sol.info["solver"], sol.info["solver"]
    assert "dropped" not in sol.info["solver"], sol.info["solver"]
    assert sol.iterations <= 10
    # round 42 (h14): the job's summary names what ran over the ranks, as the solver line
    result = sol.summary()
    assert (result["coarse"], result["overlap"]) == ("amg", 1) and result["coarse_size"] > 400
    line = next(x for x in KINDS["solve"].summary(result) if x.startswith("on 2 ranks"))
    assert line.startswith("on 2 ranks by rows: overlap-1 schwarz amg, a coarse level of "
                           f"{result['coarse_size']} across them (an AMG V-cycle of it)"), line
    assert "dropped" not in line, line


def test_row_split_bicgstab_restarts_where_its_residual_peaked():
    """Upwind convection at eps 1e-3 (80^2), no preconditioner: BiCGStab's residual rises
    2e8 times above |b|, its recurrence passes rtol while x's true residual is 20x above
    (2e-7): the row solver restarts from x's true residual, as one rank's does, and meets
    it (x = spsolve's)."""
    n, e = 80, 1e-3
    I = sp.identity(n)
    D2 = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    D1 = sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n))
    A = sp.csr_matrix(e * (sp.kron(I, D2) + sp.kron(D2, I)) * (n + 1) ** 2
                      + (sp.kron(I, D1) + 0.3 * sp.kron(D1, I)) * (n + 1))
    b = np.ones(n * n)
    calls = []
    out = on_threads(2, lambda comm: RowSolver(A, method="bicgstab", precond="none",
                                               comm=comm).iterate(
        b, rtol=1e-8, maxiter=1000, callback=lambda k, rn, xl: calls.append(k)))
    r = out[0]
    assert max(r.history) > 1e6 * r.bnorm
    assert r.converged and r.true <= 1e-8 * r.bnorm, r.true / r.bnorm
    ref = spla.spsolve(A.tocsc(), b)
    x = np.concatenate([o.x for o in out])
    assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)
    ks = sorted(set(calls))
    assert ks == list(range(1, r.iterations + 1)), (ks[-3:], r.iterations)

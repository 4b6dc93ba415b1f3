"""Round 39 (h7): a user's sparse matrix split over ranks by rows (``parallel/rows.py``):
the halo from the column pattern, the product, CG / BiCGStab with Jacobi, against SciPy's
``spsolve`` and products. Ranks are threads here with an in-process stand-in for mpi4py's
calls the solver makes (``alltoall``, ``Alltoallv``, ``Allreduce``, ``Allgatherv``); the
MPI run of the same code: ``scripts/rows_mpi.py`` (slow)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.rows import RowPlan, row_ranges, row_solve

from .thread_ranks import on_threads, shuffled_laplacian

pytest.importorskip("mpi4py")


_matrix = shuffled_laplacian


def _on_threads(size, fn):
    return on_threads(size, fn)


def test_plan_product_is_scipys():
    A = _matrix(12, convect=3.0)
    n = A.shape[0]
    ranges = row_ranges(n, 3)
    plans = [RowPlan.build(A[lo:hi], lo, hi, ranges) for lo, hi in ranges]
    for me, plan in enumerate(plans):   # what each rank asks of me
        plan.sends = [p.ghosts[me] - plan.lo for p in plans]
    x = np.random.default_rng(1).standard_normal(n)
    y = []
    for me, plan in enumerate(plans):
        own = x[plan.lo:plan.hi]
        ghost = np.concatenate([x[p.lo:p.hi][p.sends[me]] for p in plans])
        assert np.array_equal(ghost, x[np.concatenate(plan.ghosts)])
        y.append(plan.product(own, ghost))
    assert np.allclose(np.concatenate(y), A @ x, rtol=0, atol=1e-12)
    # the halo is the column pattern's: every other block is read (shuffled unknowns)
    assert all(p.ghosts[q].size > 0 for i, p in enumerate(plans) for q in range(3) if q != i)
    assert not any(p.ghosts[i].size for i, p in enumerate(plans))


@pytest.mark.parametrize("method,convect", [("cg", 0.0), ("bicgstab", 4.0)])
def test_row_solve_over_ranks_is_spsolves(method, convect):
    A = _matrix(20, convect=convect)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    one, info1 = row_solve(A, b, method=method, rtol=1e-10)
    assert info1 == 0 and np.linalg.norm(one - ref) <= 1e-7 * np.linalg.norm(ref)
    results = _on_threads(3, lambda comm: row_solve(A, b, method=method, rtol=1e-10,
                                                     comm=comm))
    for x, info in results:
        assert info == 0
        assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
        assert np.array_equal(x, results[0][0])   # the same x on every rank
    if method == "cg":   # the one-rank iterations: the same Krylov space, so x agrees
        assert np.linalg.norm(results[0][0] - one) <= 1e-8 * np.linalg.norm(ref)


def test_row_solve_refusals():
    A = _matrix(6)
    with pytest.raises(ValueError, match="method='minres'.*'cg' or 'bicgstab' or 'gmres'"):
        row_solve(A, np.ones(36), method="minres")   # (gmres: round 39 h11)
    with pytest.raises(ValueError, match="b has 5 values"):
        row_solve(A, np.ones(5))
    with pytest.raises(ValueError, match="zero on the diagonal"):
        row_solve(sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]])), np.ones(2))


# the same on 2 MPI ranks (scripts/rows_mpi.py): test_distributed.py's launch (round 43)

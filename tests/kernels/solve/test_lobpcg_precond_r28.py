"""LOBPCG eigenvalues with skiff's multigrid as SciPy's ``M=`` (round 28): a Solver's
preconditioner as a LinearOperator (``Solver.aspreconditioner``). Oracles: ``eigsh``
(shift-invert) for the eigenvalues, pyamg's ``aspreconditioner`` for the iteration count."""

from __future__ import annotations

import warnings

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from skiff.kernels.solve import Solver, poisson


def _laplacian(m):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))
    return sp.kronsum(T, T).tocsr()


def _lobpcg(A, M, k=4, maxiter=150):
    X = np.random.default_rng(0).standard_normal((A.shape[0], k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # lobpcg warns when it stops short
        w, _, hist = sla.lobpcg(A, X, M=M, largest=False, tol=1e-8, maxiter=maxiter,
                                retResidualNormsHistory=True)
    return np.sort(w), len(hist)


def test_lobpcg_with_skiff_amg_as_pyamg():
    A = _laplacian(60)
    ref = np.sort(sla.eigsh(A, k=4, sigma=0, which="LM")[0])
    w, its = _lobpcg(A, Solver(A, method="cg", precond="amg").aspreconditioner())
    wp, its_p = _lobpcg(A, pyamg.smoothed_aggregation_solver(A).aspreconditioner())
    w0, its0 = _lobpcg(A, None)
    assert np.abs(w - ref).max() <= 1e-8 * ref.max()
    assert np.abs(wp - ref).max() <= 1e-8 * ref.max()
    assert its <= its_p + 5 and its < its0


def test_grid_solver_preconditioner_as_operator():
    """A grid problem's geometric multigrid cycle: symmetric, and it speeds LOBPCG up on
    the grid's assembled matrix."""
    p = poisson((32, 32))
    s = Solver(p, method="cg")
    M = s.aspreconditioner()
    A = p.matrix().tocsr()
    rng = np.random.default_rng(1)
    u, v = rng.standard_normal(A.shape[0]), rng.standard_normal(A.shape[0])
    assert abs(u @ (M @ v) - v @ (M @ u)) <= 1e-10 * abs(u @ (M @ v))
    ref = np.sort(sla.eigsh(A, k=4, sigma=0, which="LM")[0])
    w, its = _lobpcg(A, M)
    assert np.abs(w - ref).max() <= 1e-8 * ref.max()
    assert its < _lobpcg(A, None)[1]


def test_no_preconditioner_is_said():
    A = _laplacian(10)
    with pytest.raises(ValueError, match="no preconditioner.*precond='amg'"):
        Solver(A, precond="none").aspreconditioner()

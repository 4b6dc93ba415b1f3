"""Round 36 (h9): smoothed aggregation's prolongator smoothed with the filtered matrix on
anisotropy (``amg.filtered``, ``amg.FILTER_WEAK``), against a dense transcription of the
filtered matrix, pyamg's SA (complexity, CG iterations) and SciPy's spsolve (x)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import cg, spsolve

from skiff.kernels.solve import amg
from skiff.kernels.solve.amg import SmoothedAggregation, filtered
from skiff.kernels.solve.solver import Solver


def _lap1(m):
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m), format="csr")


def _aniso3(m, ey, ez):
    T, eye = _lap1(m), sp.identity(m)
    return sp.csr_matrix(sp.kron(sp.kron(T, eye), eye) + ey * sp.kron(sp.kron(eye, T), eye)
                         + ez * sp.kron(sp.kron(eye, eye), T))


def _dense_filtered(A, S, b):
    """The definition entry by entry: strong off-diagonals kept, weak ones lumped into the
    diagonal weighted by b_j / b_i."""
    A, S = A.toarray(), S.toarray()
    n = A.shape[0]
    F = np.zeros_like(A)
    for i in range(n):
        F[i, i] = A[i, i]
        for j in range(n):
            if j == i or A[i, j] == 0:
                continue
            if S[i, j] != 0:
                F[i, j] = A[i, j]
            else:
                F[i, i] += A[i, j] * b[j] / b[i]
    return F


def test_filtered_against_its_definition():
    rng = np.random.default_rng(3)
    n = 60
    R = sp.random(n, n, density=0.15, random_state=4, format="csr")
    A = sp.csr_matrix(-(R + R.T) + sp.diags(np.full(n, 8.0)))
    A.sort_indices()
    off = sp.triu(A, 1).tocoo()
    pick = rng.random(off.nnz) < 0.5                     # half of the connections strong
    S = sp.coo_matrix((np.ones(pick.sum()), (off.row[pick], off.col[pick])), shape=(n, n))
    S = ((S + S.T) > 0).astype(np.float64).tocsr()
    S.sort_indices()
    b = rng.uniform(0.5, 1.5, n)
    F = filtered(A, S, b)
    np.testing.assert_allclose(F.toarray(), _dense_filtered(A, S, b), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(F @ b, A @ b, rtol=1e-12, atol=1e-12)   # A^F b = A b
    # nothing strong: a diagonal matrix; everything strong: A itself
    empty = sp.csr_matrix((n, n))
    np.testing.assert_allclose(filtered(A, empty, b).toarray(), np.diag(A @ b / b), atol=1e-13)
    full = sp.csr_matrix(A - sp.diags(A.diagonal()))
    full.data[:] = 1.0
    np.testing.assert_array_equal(filtered(A, full, b).toarray(), A.toarray())


@pytest.fixture(scope="module")
def aniso():
    A = _aniso3(16, 1e-2, 1e-2)   # 4 096 unknowns, y and z at 1e-2
    return A, np.random.default_rng(0).standard_normal(A.shape[0])


def test_aniso3_complexity_and_iterations_against_pyamg(aniso, monkeypatch):
    pyamg = pytest.importorskip("pyamg")
    A, b = aniso
    ml_evo = pyamg.smoothed_aggregation_solver(A, max_coarse=400, strength="evolution")
    ml_sym = pyamg.smoothed_aggregation_solver(A, max_coarse=400)
    res = []
    ml_sym.solve(b, tol=1e-8, accel="cg", residuals=res)
    sa = SmoothedAggregation(A)
    # the unfiltered hierarchy (FILTER_WEAK > 1) is pyamg's evolution SA's complexity
    monkeypatch.setattr(amg, "FILTER_WEAK", 2.0)
    before = SmoothedAggregation(A)
    assert abs(before.operator_complexity - ml_evo.operator_complexity()) < 0.1 * \
        ml_evo.operator_complexity()
    assert sa.operator_complexity < 0.5 * before.operator_complexity
    # pyamg's evolution SA with filter_entries=True (its filtered prolongation smoothing)
    ml_f = pyamg.smoothed_aggregation_solver(
        A, max_coarse=400, strength="evolution",
        smooth=("jacobi", {"omega": 4.0 / 3.0, "filter_entries": True}))
    assert abs(sa.operator_complexity - ml_f.operator_complexity()) < 0.05 * \
        ml_f.operator_complexity()
    # within 1.5x pyamg's default (symmetric theta 0) complexity, fewer iterations
    assert sa.operator_complexity < 1.5 * ml_sym.operator_complexity()
    monkeypatch.undo()
    r = Solver(A, method="cg", precond="amg", amg="sa").solve(b, rtol=1e-8)
    assert r.iterations <= len(res) - 1
    assert r.iterations <= 12
    x = spsolve(A.tocsc(), b)
    assert np.linalg.norm(r.x - x) <= 1e-6 * np.linalg.norm(x)


def test_isotropic_hierarchy_unchanged(monkeypatch):
    """A Laplacian's evolution strength keeps every connection of the finest level: no
    filtering, the same prolongators bit for bit as with it switched off."""
    T, eye = _lap1(16), sp.identity(16)
    A = sp.csr_matrix(sp.kron(sp.kron(T, eye), eye) + sp.kron(sp.kron(eye, T), eye)
                      + sp.kron(sp.kron(eye, eye), T))
    new = SmoothedAggregation(A)
    monkeypatch.setattr(amg, "FILTER_WEAK", 2.0)
    old = SmoothedAggregation(A)
    assert len(new.levels) == len(old.levels)
    for a, c in zip(new.levels[:-1], old.levels[:-1]):
        assert (a[3] != c[3]).nnz == 0


def test_reused_hierarchy_keeps_the_filter(aniso):
    """A Newton / time step's reuse keeps the aggregates and the filters' patterns: the
    reused anisotropic hierarchy is as sparse as a fresh one (smoothed with A it was the
    unfiltered complexity), and solves the perturbed matrix as spsolve does."""
    A, b = aniso
    first = SmoothedAggregation(A)
    A2 = sp.csr_matrix(A + sp.diags(0.05 * np.random.default_rng(1).random(A.shape[0])))
    again = SmoothedAggregation(A2, reuse=first)
    fresh = SmoothedAggregation(A2)
    assert again.reused
    assert abs(again.operator_complexity - fresh.operator_complexity) < 0.05 * \
        fresh.operator_complexity
    x, info = cg(A2, b, M=again.aspreconditioner(), rtol=1e-10, maxiter=60)
    assert info == 0
    ref = spsolve(A2.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)

"""AMG with block-Jacobi (non-overlapping Schwarz) smoothing on its aggregates
(``smoother='schwarz'``), against SciPy (spsolve, dense inverses) and pyamg."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import SmoothedAggregation
from skiff.kernels.solve.amg_schwarz import block_inverse

skfem = pytest.importorskip("skfem")


def _p2_jumps(refine=4, contrast=1e6):
    """P2 on the unstructured disc, inclusions of `contrast` and 1/contrast, the coefficient
    evaluated at the quadrature points (elements straddle the jumps)."""
    from skfem.helpers import dot, grad
    from skfem.models.poisson import unit_load

    m = skfem.MeshTri.init_circle(refine)
    ib = skfem.Basis(m, skfem.ElementTriP2())

    def kappa(x):
        s = np.sin(7 * x[0]) * np.sin(7 * x[1])
        return np.where(s > 0.3, contrast, np.where(s < -0.3, 1 / contrast, 1.0))

    A = skfem.BilinearForm(lambda u, v, w: kappa(w.x) * dot(grad(u), grad(v))).assemble(ib)
    b = unit_load.assemble(ib)
    keep = ib.complement_dofs(ib.get_dofs())
    return A[keep][:, keep].tocsr(), b[keep]


def test_block_inverse_is_the_inverse_of_each_aggregates_block():
    rng = np.random.default_rng(0)
    n = 60
    R = sp.random(n, n, density=0.15, random_state=1)
    A = (R @ R.T + sp.identity(n) * 3).tocsr()
    agg = rng.integers(-1, 9, n)                   # 9 aggregates and some loners (-1)
    S = block_inverse(A, agg, 9).toarray()
    ref = np.zeros((n, n))
    for j in range(9):
        g = np.flatnonzero(agg == j)
        ref[np.ix_(g, g)] = np.linalg.inv(A[g][:, g].toarray())
    for i in np.flatnonzero(agg < 0):
        ref[i, i] = 1.0 / A[i, i]
    np.testing.assert_allclose(S, ref, rtol=1e-10, atol=1e-12)


def test_overlapping_patches_sum_their_inverses():
    rng = np.random.default_rng(3)
    n = 50
    R = sp.random(n, n, density=0.08, random_state=4)
    A = (R @ R.T + sp.identity(n) * 2).tocsr()
    agg = rng.integers(0, 6, n)
    S = block_inverse(A, agg, 6, overlap=True).toarray()
    ref = np.zeros((n, n))
    pattern = (A != 0).toarray()
    for j in range(6):
        inside = agg == j
        g = np.flatnonzero(inside | pattern[inside].any(axis=0))   # grown by neighbours
        ref[np.ix_(g, g)] += np.linalg.inv(A[g][:, g].toarray())
    np.testing.assert_allclose(S, ref, rtol=1e-9, atol=1e-12)


def test_singular_block_gets_its_pseudo_inverse():
    # two disconnected pure-Neumann pieces, each one aggregate: S = pinv of each
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(5, 5)).tolil()
    T[0, 0] = T[4, 4] = 1.0
    A = sp.block_diag([T, T]).tocsr()
    S = block_inverse(A, np.repeat([0, 1], 5), 2).toarray()
    np.testing.assert_allclose(S[:5, :5], np.linalg.pinv(T.toarray()), atol=1e-10)


def test_jumps_inside_p2_elements_take_fewer_iterations_than_point_smoothing():
    pyamg = pytest.importorskip("pyamg")
    A, b = _p2_jumps()
    ref = spla.spsolve(A.tocsc(), b)
    plain = skiff.solve(A, b, rtol=1e-6, maxiter=3000)
    block = skiff.solve(A, b, smoother="schwarz", rtol=1e-6, maxiter=3000)
    res = []
    pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-6, accel="cg", residuals=res,
                                               maxiter=3000)
    assert block.converged
    assert np.linalg.norm(block.x - ref) <= 1e-6 * np.linalg.norm(ref)
    assert block.iterations < plain.iterations / 2
    assert block.iterations < (len(res) - 1) / 2          # pyamg SA's default smoother
    via_object = skiff.Solver(A, precond=SmoothedAggregation(A, smoother="schwarz"))
    assert via_object.solve(b, rtol=1e-6).iterations == block.iterations
    overlap = skiff.solve(A, b, smoother="schwarz-overlap", rtol=1e-6, maxiter=3000)
    assert overlap.converged and overlap.iterations < block.iterations
    assert np.linalg.norm(overlap.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_the_cycle_stays_symmetric_positive_definite():
    A, _ = _p2_jumps(refine=3, contrast=1e3)
    M = SmoothedAggregation(A, smoother="schwarz").aspreconditioner()
    rng = np.random.default_rng(2)
    u, v = rng.standard_normal((2, A.shape[0]))
    assert abs(u @ (M @ v) - v @ (M @ u)) <= 1e-10 * abs(u @ (M @ v))
    assert u @ (M @ u) > 0


def test_refusals_name_the_fix():
    A, b = _p2_jumps(refine=2)
    with pytest.raises(ValueError, match="precond='amg'"):
        skiff.Solver(A, precond="jacobi", smoother="schwarz")
    with pytest.raises(ValueError, match="symmetric"):
        SmoothedAggregation(sp.csr_matrix(np.triu(A.toarray())) + sp.identity(A.shape[0]),
                            smoother="schwarz")
    with pytest.raises(ValueError, match="'rbgs' or 'chebyshev'"):
        skiff.Solver(skiff.kernels.solve.poisson((16, 16)), precond="mg", smoother="schwarz")
    with pytest.raises(ValueError, match="smoother='bogus'"):
        SmoothedAggregation(A, smoother="bogus")


def test_a_stalled_amg_solve_names_the_block_smoother():
    A, b = _p2_jumps()
    short = skiff.solve(A, b, rtol=1e-6, maxiter=20)
    assert not short.converged and "smoother='schwarz'" in short.status
    done = skiff.solve(A, b, rtol=1e-6, maxiter=20, smoother="schwarz-overlap")
    assert "smoother=" not in done.status

"""A SciPy user's programs, round 36 (h7): a well-conditioned matrix (a P1 mass matrix, M +
dt K at a small time step) solved by Jacobi-CG, as SciPy's plain CG does it, not after an AMG
setup that cost 30x the solve; GMRES's ``callback_type='legacy'`` counting ``maxiter`` in
inner iterations, as SciPy's."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import skiff
from skiff.kernels.solve.graph_auto import well_conditioned as _well_conditioned
from skiff.kernels.solve.solver import Solver, lanczos_ritz


def well_conditioned(A):
    return _well_conditioned(A, lanczos_ritz)


def _lap(m):
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m))


def _mass(m):
    return sp.diags([1.0, 4.0, 1.0], [-1, 0, 1], shape=(m, m)) / 6


@pytest.fixture(scope="module")
def p1():
    m = 80
    M = sp.csr_matrix(sp.kron(_mass(m), _mass(m)))
    K = sp.csr_matrix(sp.kron(_lap(m), _mass(m)) + sp.kron(_mass(m), _lap(m)))
    return M, K, np.random.default_rng(0).standard_normal(m * m)


def test_a_mass_matrix_takes_jacobi_cg_with_spsolves_answer(p1):
    M, K, b = p1
    assert "well conditioned" in well_conditioned(M)
    s = Solver(M)
    assert s.precond_name == "jacobi" and s.method == "cg"
    assert "well conditioned" in s.describe()
    r = s.solve(b, rtol=1e-10)
    np.testing.assert_allclose(r.x, sla.spsolve(M.tocsc(), b), rtol=1e-8, atol=1e-9)
    # SciPy's Jacobi-CG takes as many iterations (the same method)
    its = []
    sla.cg(M, b, M=sp.diags(1 / M.diagonal()), rtol=1e-10, callback=its.append)
    assert abs(r.iterations - len(its)) <= 1


def test_a_small_time_step_is_well_conditioned_a_large_one_is_not(p1):
    M, K, _ = p1
    h2 = (1 / 81) ** 2
    assert well_conditioned(sp.csr_matrix(M + 1e-5 / h2 * K)) is not None   # 17 its
    assert well_conditioned(sp.csr_matrix(M + 1e-2 / h2 * K)) is None       # 160+ its
    assert well_conditioned(K) is None            # a Laplacian: rows sum to ~0
    assert Solver(K).precond_name == "amg"
    # a shifted Laplacian near the threshold: rows sum to 1/7 of the diagonal, cond ~ 10
    m = 20
    T, I = _lap(m), sp.identity(m)
    P3 = sp.kron(sp.kron(T, I), I) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(I, I), T)
    assert well_conditioned(sp.csr_matrix(P3 + sp.identity(m ** 3))) is not None
    assert well_conditioned(sp.csr_matrix(P3 + 0.1 * sp.identity(m ** 3))) is None


def test_a_wrong_guess_still_converges_through_amg(p1):
    """Jacobi-CG kept to its budget: where it has not converged, AMG is built after all."""
    M, K, b = p1
    s = Solver(M)
    s._graph_budget = 3                     # as if the estimate had been wrong
    r = s.solve(b, rtol=1e-10)
    assert r.converged and s.precond_name == "amg"
    np.testing.assert_allclose(r.x, sla.spsolve(M.tocsc(), b), rtol=1e-8, atol=1e-9)


def _convection(m=40, eps=1e-3):
    h = 1 / (m + 1)
    T = _lap(m) * eps / h ** 2
    C = sp.diags([-1.0, 1.0], [-1, 0], shape=(m, m)) / h
    I = sp.identity(m)
    return sp.csr_matrix(sp.kron(I, T) + sp.kron(T, I) + sp.kron(I, C) + 0.5 * sp.kron(C, I))


@pytest.mark.parametrize("restart", [10, 30])
def test_gmres_legacy_callback_counts_maxiter_in_inner_iterations(restart):
    A = _convection()
    b = np.ones(A.shape[0])
    for ct, maxiter in (("legacy", 25), ("pr_norm", 3)):
        mine, theirs = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            xs, info = sla.gmres(A, b, restart=restart, rtol=1e-10, maxiter=maxiter,
                                 callback=theirs.append, callback_type=ct)
        r = skiff.solve(A, b, method="gmres", precond="none", restart=restart, rtol=1e-10,
                        maxiter=maxiter, callback=mine.append, callback_type=ct)
        x, info2 = r
        assert info2 == info and info > 0
        assert len(mine) == len(theirs)
        # the residual norms SciPy's unpreconditioned GMRES reports, to rounding
        np.testing.assert_allclose(mine, theirs, rtol=1e-6)
        if ct == "legacy":
            assert r.iterations == maxiter and str(maxiter) in r.status
            assert "inner iterations" in r.status
            np.testing.assert_allclose(x, xs, rtol=1e-6, atol=1e-8 * abs(xs).max())

"""Round 30: an explicit CG, Jacobi, Chebyshev or AMG on a symmetric saddle-point matrix was
refused naming precond='none' with GMRES (or 'bicgstab'/'gmres' for CG), while skiff solves it
with MINRES and its block preconditioner ('saddle', since round 28). The refusal now names
that; following it gives SciPy's spsolve x. CG on a symmetric indefinite matrix that is no
saddle point names MINRES."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import SolveError, solve


def _laplacian(n):
    d = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return (sp.kron(sp.identity(n), d) + sp.kron(d, sp.identity(n))).tocsr()


def _stokes_like(n=16):
    """[[K, B^T], [B, 0]]: K a 2-D Laplacian (two velocity fields), B a discrete divergence
    onto the cells' (n-1)^2 pressures (forward differences), the constant pressure removed."""
    K1 = _laplacian(n)
    K = sp.block_diag([K1, K1])
    e = sp.diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n))
    s = sp.diags([0.5 * np.ones(n - 1), 0.5 * np.ones(n - 1)], [0, 1], shape=(n - 1, n))
    B = sp.hstack([sp.kron(s, e), sp.kron(e, s)]).tocsr()[1:]   # pin one pressure
    A = sp.bmat([[K, B.T], [B, None]]).tocsr()
    rng = np.random.default_rng(3)
    b = np.concatenate([rng.standard_normal(K.shape[0]), np.zeros(B.shape[0])])
    return A, b


@pytest.mark.parametrize("kw", [dict(method="cg"), dict(precond="amg"), dict(precond="jacobi"),
                                dict(method="gmres", precond="chebyshev")])
def test_saddle_refusal_names_saddle_and_its_remedy_solves(kw):
    A, b = _stokes_like()
    with pytest.raises(SolveError) as err:
        solve(A, b, **kw)
    msg = str(err.value)
    assert "precond='saddle'" in msg and "method='minres'" in msg, msg
    assert "precond='none'" not in msg
    ref = spla.spsolve(A.tocsc(), b)
    sol = solve(A, b, method="minres", precond="saddle", rtol=1e-10)
    assert sol.converged
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_cg_on_symmetric_indefinite_names_minres():
    A = (_laplacian(24) - 0.3 * sp.identity(24 * 24)).tocsr()   # a few negative eigenvalues
    assert spla.eigsh(A, k=1, sigma=-1.0, return_eigenvectors=False)[0] < 0   # SciPy: indefinite
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    with pytest.raises(SolveError) as err:
        solve(A, b, method="cg", precond="none")
    assert "method='minres'" in str(err.value)
    assert "precond='saddle'" not in str(err.value)
    sol = solve(A, b, method="minres", rtol=1e-10)
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_stokes_stabilised_by_a_pressure_mass_matrix_takes_the_block():
    """[[K, B^T], [B, -eps M_p]], M_p a (Q1-like) pressure mass matrix: positive definite but
    not diagonally dominant, so it was not taken for a stabilisation and auto's GMRES+AMG
    stagnated at |r|/|b| = 1 (scikit-fem Stokes P2/P1 with 1e-6 M_p: now 70 MINRES
    iterations). Oracles: spsolve's x; SciPy's minres without M (more iterations)."""
    A0, b = _stokes_like()
    np_ = A0.shape[0] - 2 * 16 * 16
    m1 = sp.diags([np.full(14, 1 / 6), np.full(15, 2 / 3), np.full(14, 1 / 6)], [-1, 0, 1])
    Mp = sp.kron(m1, m1).tocsr()[1:, 1:]                    # the pinned pressure removed
    assert Mp.shape[0] == np_
    assert abs(Mp - sp.diags(Mp.diagonal())).sum() > Mp.diagonal().sum()   # not dominant
    for eps in (1e-6, 1e-2):
        A = A0.copy().tolil()
        A[-np_:, -np_:] = -eps * Mp
        A = A.tocsr()
        sol = solve(A, b, rtol=1e-10)
        assert (sol.method, sol.precond, sol.converged) == ("minres", "saddle", True)
        ref = spla.spsolve(A.tocsc(), b)
        assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
        its = []
        spla.minres(A, b, rtol=1e-10, maxiter=20000, callback=its.append)
        assert sol.iterations < len(its)


def test_a_small_positive_c_block_after_cg_finds_it_indefinite():
    """[[K, B^T], [B, +eps M_p]] has a positive diagonal, so auto tries CG; it is indefinite
    and auto went on with GMRES+AMG, to a stall at |r|/|b| = 0.99 (scikit-fem Stokes with
    1e-6 M_p); now MINRES with the block preconditioner (70 iterations there)."""
    A0, b = _stokes_like()
    np_ = A0.shape[0] - 2 * 16 * 16
    m1 = sp.diags([np.full(14, 1 / 6), np.full(15, 2 / 3), np.full(14, 1 / 6)], [-1, 0, 1])
    A = A0.tolil()
    A[-np_:, -np_:] = 1e-6 * sp.kron(m1, m1).tocsr()[1:, 1:]
    A = A.tocsr()
    assert A.diagonal().min() > 0 and np.linalg.eigvalsh(A.toarray()).min() < 0
    sol = solve(A, b, rtol=1e-10)
    assert (sol.method, sol.precond, sol.converged) == ("minres", "saddle", True)
    assert "saddle point" in sol.info["solver"]
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_a_stalled_gmres_amg_on_a_symmetric_matrix_names_minres():
    """An explicit GMRES+AMG on a symmetric indefinite matrix (a saddle point with a small
    positive C, no fallback when the method is given) stalls; the status named precond='none',
    a longer restart or 'direct', now MINRES too, which reaches spsolve's x."""
    A0, b = _stokes_like()
    np_ = A0.shape[0] - 2 * 16 * 16
    A = A0.tolil()
    A[-np_:, -np_:] = 1e-6 * sp.identity(np_)
    A = A.tocsr()
    sol = solve(A, b, method="gmres", precond="amg", rtol=1e-8)
    assert not sol.converged
    assert sol.status.startswith("stagnated") and "method='minres'" in sol.status, sol.status
    follow = solve(A, b, method="minres", precond="none", rtol=1e-9, maxiter=20000)
    ref = spla.spsolve(A.tocsc(), b)
    assert follow.converged
    assert np.linalg.norm(follow.x - ref) <= 1e-6 * np.linalg.norm(ref)

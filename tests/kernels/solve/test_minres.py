"""method='minres' for symmetric indefinite systems (shifted Laplacians, saddle points), against
SciPy's ``minres`` (the same iterates, with and without an SPD preconditioner M) and
``spsolve``; 'auto' picks it where it had GMRES without a preconditioner on a symmetric
matrix; what MINRES cannot take is refused with the remedy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import skiff.kernels.solve as ks
from skiff.kernels.solve import SolveError


def _laplacian2d(m):
    e = np.ones(m)
    T = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def _shifted(m=20, shift=0.5):
    """L - shift I: symmetric, positive diagonal, indefinite (a Helmholtz-like operator)."""
    return (_laplacian2d(m) - shift * sp.eye(m * m)).tocsr()


def _saddle(m=16, k=40):
    """[[L, B^T], [B, 0]]: a saddle point (zero diagonal block), symmetric indefinite."""
    L = _laplacian2d(m)
    B = sp.random(k, m * m, density=0.05, random_state=1) + sp.eye(k, m * m)
    return sp.bmat([[L, B.T], [B, None]]).tocsr()


def _jacobi_abs(A):
    d = np.abs(A.diagonal())
    d[d == 0] = 1.0
    return sp.diags(1.0 / d).tocsr()   # symmetric positive definite, as MINRES needs


def _iterates(fn):
    xs = []
    out = fn(lambda xk: xs.append(np.array(xk, copy=True)))
    return out, xs


@pytest.mark.parametrize("with_m", [False, True])
def test_minres_iterates_and_residuals_are_scipys(with_m):
    A = _shifted()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    M = _jacobi_abs(A) if with_m else None
    (ref, info), theirs = _iterates(lambda cb: sla.minres(A, b, rtol=1e-10, M=M, callback=cb))
    sol, mine = _iterates(lambda cb: ks.solve(A, b, method="minres", precond=M, rtol=1e-10,
                                               callback=cb))
    assert info == 0 and sol.converged and sol.method == "minres"
    k = min(len(theirs), len(mine))
    assert k > 50
    nb = np.linalg.norm(b)
    for i in range(k):   # the same Krylov minimisers, iteration by iteration
        assert np.linalg.norm(mine[i] - theirs[i]) <= 1e-6 * np.linalg.norm(theirs[i]), i
        # skiff's residual history is the 2-norm |b - A x_k| of SciPy's iterate
        true = np.linalg.norm(b - A @ theirs[i])
        assert abs(sol.residuals[i + 1] - true) <= 1e-6 * nb, i
    # skiff stops on |b - Ax| <= rtol |b| (SciPy on its backward-error estimate)
    assert np.linalg.norm(b - A @ sol.x) <= 1e-9 * nb
    assert np.allclose(sol.x, sla.spsolve(A.tocsc(), b), rtol=0, atol=1e-8)


def test_minres_on_a_saddle_point_is_scipys_then_spsolves():
    A = _saddle()
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    (_, info), theirs = _iterates(lambda cb: sla.minres(A, b, rtol=1e-10, callback=cb))
    sol, mine = _iterates(lambda cb: ks.solve(A, b, method="minres", precond=None,
                                               rtol=1e-10, callback=cb))
    assert info == 0 and sol.converged
    for i in range(15):   # before rounding differences grow (both are the same method)
        assert np.linalg.norm(mine[i] - theirs[i]) <= 1e-9 * np.linalg.norm(theirs[i]), i
    ref = sla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)


def test_minres_solves_a_hermitian_indefinite_system():
    m = 12
    n = m * m
    H = (_laplacian2d(m) - 0.6 * sp.eye(n)
         + 0.3j * (sp.eye(n, k=1) - sp.eye(n, k=-1))).tocsr()   # Hermitian, indefinite
    rng = np.random.default_rng(4)
    b = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    sol = ks.solve(H, b, method="minres", precond=None, rtol=1e-10)
    ref = sla.spsolve(H.tocsc(), b)
    assert sol.converged and sol.x.dtype == np.complex128
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)


def test_auto_picks_minres_for_a_symmetric_matrix_without_preconditioner():
    A = _saddle()
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    # no preconditioner (auto takes the saddle-point block one since round 28): symmetric,
    # so MINRES, not GMRES
    auto = ks.solve(A, b, rtol=1e-8, precond=None)
    gm = ks.solve(A, b, method="gmres", precond=None, rtol=1e-8)
    assert auto.method == "minres" and auto.precond == "none" and auto.converged
    assert ks.solve(A, b, rtol=1e-8).precond == "saddle"
    assert auto.iterations < gm.iterations   # the full Krylov space against GMRES(30)'s
    ref = sla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(auto.x - ref) <= 1e-6 * np.linalg.norm(ref)
    # CG finding the shifted Laplacian indefinite, with no preconditioner: MINRES too
    S = _shifted()
    c = np.ones(S.shape[0])
    sol = ks.solve(S, c, precond="none", rtol=1e-8)
    assert sol.method == "minres" and sol.converged
    assert np.allclose(sol.x, sla.spsolve(S.tocsc(), c), rtol=1e-6, atol=1e-9)
    # a non-symmetric matrix keeps GMRES
    N = (_laplacian2d(10) + 0.3 * (sp.eye(100, k=1) - sp.eye(100, k=-1))).tocsr()
    N = (N - sp.diags(N.diagonal())).tocsr()   # zero diagonal: no AMG, as the saddle
    assert ks.solve(N, np.ones(100), rtol=1e-6, maxiter=5).method == "gmres"


def test_what_minres_cannot_take_is_refused_with_the_remedy():
    N = (_laplacian2d(8) + 0.3 * (sp.eye(64, k=1) - sp.eye(64, k=-1))).tocsr()
    with pytest.raises(SolveError, match="symmetric.*gmres"):
        ks.solve(N, np.ones(64), method="minres")
    A = _shifted(8)
    neg = sp.diags(-np.ones(64)).tocsr()   # negative definite M
    with pytest.raises(SolveError, match="positive definite"):
        ks.solve(A, np.ones(64), method="minres", precond=neg)
    with pytest.raises(ValueError, match="indefinite preconditioner"):
        sla.minres(A, np.ones(64), M=neg)   # SciPy refuses it too


def test_scipys_shift_says_what_to_pass():
    A = _shifted(8, shift=0.0)
    b = np.ones(64)
    with pytest.raises(TypeError, match=r"A - 0.5 \* scipy.sparse.identity\(n\)"):
        ks.solve(A, b, method="minres", shift=0.5)
    # what it says is SciPy's shifted system
    ref, info = sla.minres(A, b, shift=0.5, rtol=1e-12)
    sol = ks.solve((A - 0.5 * sp.identity(64)).tocsr(), b, method="minres", rtol=1e-12)
    # MINRES on a matrix takes no preconditioner unless given one (AMG of an indefinite
    # matrix is not positive definite, which MINRES needs), as SciPy's minres
    assert sol.precond == "none" and sol.converged
    assert info == 0 and np.allclose(sol.x, ref, rtol=1e-8, atol=1e-10)

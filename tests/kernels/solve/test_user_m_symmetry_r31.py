"""A user's M that is not symmetric on a symmetric matrix (round 31): ``M=spilu(A)`` (what a
stalled solve's status suggests for convection) on a Laplacian. CG's short recurrence needs
a symmetric M: SciPy's ``cg`` and skiff's ``auto`` (CG) ran to maxiter (80^2: 20 000
iterations, 45 s, |r|/|b| = 0.16). ``auto`` now takes GMRES (SciPy's ``gmres`` with the same
M is the oracle: the same iteration count) and an explicit ``method='cg'`` the flexible
(Polak-Ribiere) form."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff


def _laplacian(n):
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tocsc()


def _case(n=40):
    A = _laplacian(n)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    return A, b, spla.spilu(A)


def test_scipy_cg_fails_with_spilu_so_the_case_is_real():
    A, b, ilu = _case()
    M = spla.LinearOperator(A.shape, ilu.solve)
    _, info = spla.cg(A, b, rtol=1e-8, M=M, maxiter=500)
    assert info > 0


def test_auto_takes_gmres_as_scipy_gmres_does():
    A, b, ilu = _case()
    sol = skiff.solve(A, b, M=ilu, maxiter=100)
    assert sol.converged, sol.status
    assert sol.method == "gmres" and "M is not symmetric" in sol.info["solver"]
    count = []
    M = spla.LinearOperator(A.shape, ilu.solve)
    x, info = spla.gmres(A, b, rtol=1e-8, M=M, restart=30, maxiter=100,
                         callback=count.append, callback_type="pr_norm")
    assert info == 0
    assert abs(sol.iterations - len(count)) <= 2, (sol.iterations, len(count))
    ref = spla.spsolve(A, b)
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_explicit_cg_runs_flexible():
    A, b, ilu = _case()
    sol = skiff.solve(A, b, M=ilu, method="cg", maxiter=2000)
    assert sol.converged, sol.status
    assert "flexible CG" in sol.info["solver"]
    ref = spla.spsolve(A, b)
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_symmetric_user_m_keeps_cg():
    """A symmetric M (pyamg's V-cycle with symmetric Gauss-Seidel; Jacobi) keeps plain CG."""
    A, b, _ = _case()
    sol = skiff.solve(A, b, M=sp.diags(1.0 / A.diagonal()))
    assert sol.method == "cg" and "flexible" not in sol.info["solver"]
    count = []
    spla.cg(A, b, rtol=1e-8, M=sp.diags(1.0 / A.diagonal()), callback=count.append)
    assert sol.iterations == len(count)

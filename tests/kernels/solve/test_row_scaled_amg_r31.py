"""A non-symmetric matrix whose rows are scaled apart (round 31): ``D A`` with ``A`` a
Laplacian and ``D`` spanning decades (equations multiplied through, other units). AMG set up
on ``D A`` itself weighs the rows by their scale and GMRES+AMG needed 279 iterations at six
decades, 1 861 (44 s) at twelve; the hierarchy is now built on ``D^-1 A`` and applied to
``D^-1 r``: 9. Oracles: SciPy's ``spsolve`` (x) and SciPy's ``gmres`` with the V-cycle as
``M`` (SciPy's own Krylov loop)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve.amg import SmoothedAggregation


def _laplacian(n):
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tocsr()


def _row_scaled(n=64, decades=12, seed=0):
    rng = np.random.default_rng(seed)
    L = _laplacian(n)
    D = sp.diags(10.0 ** rng.uniform(-decades / 2, decades / 2, L.shape[0]))
    b0 = rng.standard_normal(L.shape[0])
    return (D @ L).tocsr(), D @ b0   # b scaled as the rows are: the same equations


def test_auto_solves_row_scaled_matrix_as_spsolve():
    A, b = _row_scaled()
    sol = skiff.solve(A, b)
    ref = spla.spsolve(A.tocsc(), b)
    assert sol.converged, sol.status
    assert "rows scaled by the diagonal" in sol.info["solver"]
    assert np.linalg.norm(b - A @ sol.x) <= 1e-8 * np.linalg.norm(b) * 1.01
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)
    assert sol.iterations <= 25, sol.iterations   # was 600-1900 (restart grown to 240)


def test_vcycle_is_scipy_gmres_preconditioner():
    A, b = _row_scaled(n=48, decades=8, seed=1)
    M = skiff.Solver(A).aspreconditioner()
    count = [0]
    x, info = spla.gmres(A, b, M=M, rtol=1e-8, restart=30, maxiter=5,
                         callback=lambda r: count.__setitem__(0, count[0] + 1),
                         callback_type="pr_norm")
    assert info == 0
    assert count[0] <= 25, count[0]
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-5 * np.linalg.norm(ref)


def test_hierarchy_of_scaled_rows_is_the_unscaled_one():
    """A = D L: its V-cycle applied to r is the V-cycle of diag(A)^-1 A = L / 4 applied to
    diag(A)^-1 r, whatever D (the scale cancels)."""
    L = _laplacian(40)
    rng = np.random.default_rng(2)
    D = sp.diags(10.0 ** rng.uniform(-4, 4, L.shape[0]))
    r = rng.standard_normal(L.shape[0])
    scaled = SmoothedAggregation((D @ L).tocsr(), symmetric=False)
    plain = SmoothedAggregation((L / 4.0).tocsr(), symmetric=False)
    assert scaled.row_scale is not None and plain.row_scale is None
    z1 = scaled.aspreconditioner() @ r
    z2 = plain.aspreconditioner() @ (r / (4.0 * D.diagonal()))   # diag(D L) = 4 D
    np.testing.assert_allclose(z1, z2, rtol=1e-8, atol=1e-12 * np.abs(z2).max())


def test_rows_of_one_scale_keep_their_hierarchy():
    """Convection-diffusion with a constant diagonal: no scaling, as before."""
    n = 30
    h = 1.0 / (n + 1)
    one = sp.diags([-np.ones(n - 1), np.ones(n)], [-1, 0]) / h
    A = (1e-2 * _laplacian(n) / h**2 + sp.kron(sp.eye(n), one)).tocsr()
    amg = SmoothedAggregation(A, symmetric=False)
    assert amg.row_scale is None

"""Dirichlet values written as identity rows with their columns kept (``skfem.enforce``'s
way; a finite-difference user's ``A[i, :] = 0; A[i, i] = 1``): the matrix is not symmetric,
so ``auto`` took GMRES+AMG (3-D P1 elasticity, 24 843 unknowns: 40 iterations, 2.9-3.3 s);
the columns' entries moved to b leave a symmetric matrix, and CG+AMG takes 23 (1.5 s), what
``skfem.condense`` gives (round 31). Oracles: SciPy's ``spsolve`` on the user's matrix, and
SciPy's ``cg`` on the condensed system (the same iteration count unpreconditioned)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff


def _enforced(n=30, value=2.0):
    """The 5-point Laplacian on an (n+2)^2 grid with the boundary's unknowns as identity rows
    (b = value there: non-homogeneous Dirichlet), the columns kept; and the condensed one."""
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n + 2, n + 2))
    A = (sp.kron(sp.eye(n + 2), one) + sp.kron(one, sp.eye(n + 2))).tocsr() * (n + 1) ** 2
    grid = np.arange((n + 2) ** 2).reshape(n + 2, n + 2)
    D = np.unique(np.r_[grid[0], grid[-1], grid[:, 0], grid[:, -1]])
    inner = np.setdiff1d(grid.ravel(), D)
    b = np.ones(A.shape[0])
    b[D] = value
    lil = A.tolil()
    for i in D:   # skfem.enforce: the row's entries zeroed (kept, stored), diagonal 1
        lil.data[i] = [0.0] * len(lil.data[i])
        lil[i, i] = 1.0
    Ae = lil.tocsr()
    Ac = A[inner][:, inner]
    bc = b[inner] - A[inner][:, D] @ b[D]
    return Ae, b, D, inner, Ac, bc


def test_auto_takes_cg_and_matches_spsolve():
    Ae, b, D, inner, Ac, bc = _enforced()
    assert abs(Ae - Ae.T).max() > 0   # the user's matrix is not symmetric
    sol = skiff.solve(Ae, b)
    assert sol.converged and sol.method == "cg", sol.info["solver"]
    assert "identity rows' columns moved to b" in sol.info["solver"]
    ref = spla.spsolve(Ae.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    assert np.array_equal(sol.x[D], b[D])
    assert np.linalg.norm(b - Ae @ sol.x) <= 1.01e-8 * np.linalg.norm(b)


def test_unpreconditioned_cg_counts_as_scipy_on_the_lifted_system():
    """The system CG runs: A with the identity rows' columns zeroed off the diagonal, b less
    those columns times b_D (built here by hand, then SciPy's cg on it)."""
    Ae, b, D, inner, Ac, bc = _enforced(n=20)
    sol = skiff.solve(Ae, b, method="cg", precond="none", rtol=1e-10)
    As = Ae.tolil()
    As[:, D] = 0.0
    As[D, D] = 1.0
    As = As.tocsr()
    bs = b - Ae[:, D] @ b[D]
    bs[D] = b[D]
    count = []
    x, info = spla.cg(As, bs, rtol=1e-10 * np.linalg.norm(b) / np.linalg.norm(bs),
                      callback=count.append, maxiter=5000)
    assert info == 0 and sol.converged
    assert abs(sol.iterations - len(count)) <= 1, (sol.iterations, len(count))
    np.testing.assert_allclose(sol.x[inner], x[inner], rtol=1e-7)
    np.testing.assert_allclose(sol.x[inner], spla.spsolve(Ac.tocsc(), bc), rtol=1e-7)


def test_a_matrix_not_symmetric_elsewhere_keeps_gmres():
    Ae, b, *_ = _enforced(n=12)
    Ae = Ae.tolil()
    Ae[100, 101] += 1.0   # an interior entry breaks the symmetry for good
    sol = skiff.solve(Ae.tocsr(), b)
    assert sol.method == "gmres" and sol.converged
    assert "moved to b" not in sol.info["solver"]

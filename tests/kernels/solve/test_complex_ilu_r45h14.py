"""Round 45 (h14): ``precond='ilu'`` / ``'ilut'`` on a complex matrix. They were refused in
one line (``builds on real matrices only``) where SciPy's ``spilu`` factors complex ones;
the numba kernels (and their Python twins) now run in complex128. Oracles: SciPy's
``spsolve`` / ``spilu`` + ``gmres`` on a damped Helmholtz matrix, and ILU(0)'s definition
(``L U = A`` on A's pattern)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve.ilu0 import ILU0
from skiff.kernels.solve.ilut import ILUT


def _helmholtz(n=20, k=12.0):
    """``-Laplace u - k^2 (1 - 0.1 i) u`` on the unit square, Dirichlet: complex symmetric,
    indefinite in its real part (k^2 past the Laplacian's lowest eigenvalues)."""
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    A = sp.kronsum(T, T) - k ** 2 * (1 - 0.1j) * sp.identity(n * n)
    rng = np.random.default_rng(0)
    return sp.csr_matrix(A), rng.standard_normal(n * n) + 1j * rng.standard_normal(n * n)


def test_complex_factors_against_their_definitions():
    A, b = _helmholtz()
    x = spla.spsolve(A.tocsc(), b)
    full = ILUT(A, drop_tol=0.0, fill_factor=100.0)   # nothing dropped: the exact LU
    assert full.u_diag.dtype == np.complex128
    assert np.abs(full.solve(b) - x).max() <= 1e-10 * np.abs(x).max()
    f0 = ILU0(A)
    LU = sp.csr_matrix((f0.data, f0.indices, f0.indptr), shape=A.shape)
    L = sp.tril(LU, -1) + sp.identity(A.shape[0])
    E = sp.csr_matrix(L @ sp.triu(LU) - A).multiply(abs(A) > 0)
    assert abs(E).max() <= 1e-12 * abs(A).max()
    f = ILUT(A, drop_tol=1e-3, fill_factor=5)   # the numba kernel and its Python twin
    g = ILUT(A, drop_tol=1e-3, fill_factor=5, python=True)
    assert f.nnz == g.nnz
    assert np.abs(f.solve(b) - g.solve(b)).max() <= 1e-12 * np.abs(g.solve(b)).max()


def test_a_complex_helmholtz_solve_takes_ilu_and_ilut():
    """GMRES(30), rtol 1e-8, 20^2: spilu (drop_tol 1e-3, fill_factor 5) + SciPy's gmres 31
    iterations; skiff's ILUT with the same options 8 (RCM order), ILU(0) 80; HEAD refused
    both. x = spsolve's."""
    A, b = _helmholtz()
    x = spla.spsolve(A.tocsc(), b)
    ilu = spla.spilu(A.tocsc(), drop_tol=1e-3, fill_factor=5)
    M = spla.LinearOperator(A.shape, ilu.solve, dtype=np.complex128)
    count = [0]
    _, info = spla.gmres(A, b, M=M, rtol=1e-8, restart=30, maxiter=20,
                         callback=lambda _: count.__setitem__(0, count[0] + 1),
                         callback_type="pr_norm")
    assert info == 0
    opts = {"drop_tol": 1e-3, "fill_factor": 5}
    for precond, most in ((("ilut", opts), count[0]), ("ilu", 3 * count[0])):
        got = skiff.solve(A, b, method="gmres", precond=precond, rtol=1e-8)
        assert got.converged and got.iterations <= most, (precond, got.iterations, most)
        assert np.abs(got.x - x).max() <= 1e-6 * np.abs(x).max()


def test_auto_takes_cocg_with_ilu0_of_a_complex_symmetric_matrix():
    """ILU(0) of a complex symmetric A is ``L D L^T``, complex symmetric: auto's COCG (CG's
    short recurrence with ``u^T v``) 50 iterations where GMRES(30) takes 80."""
    A, b = _helmholtz()
    got = skiff.solve(A, b, precond="ilu", rtol=1e-8)
    gm = skiff.solve(A, b, precond="ilu", method="gmres", rtol=1e-8)
    assert got.method == "cocg" and got.converged, got.method
    assert got.iterations < gm.iterations, (got.iterations, gm.iterations)
    x = spla.spsolve(A.tocsc(), b)
    assert np.abs(got.x - x).max() <= 1e-6 * np.abs(x).max()

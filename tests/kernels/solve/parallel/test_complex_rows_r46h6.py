"""Round 46 (h6): a complex matrix split by rows (``--np 2`` refused it: the row split solved
real systems only). The Krylov loops over the ranks take ``u^H v`` (GMRES's rotations
unitary), the halo and the gathers carry complex128, the block solves (ILU(0), ILUT, AMG)
are complex already (round 45 h14); the overlap and the coarse level stay real, so a complex
matrix runs block Jacobi. Thread ranks; x against SciPy's ``spsolve``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve.parallel.rows import RowSolver

from .thread_ranks import on_threads


def _laplacian(n=12):
    h = 1.0 / (n + 1)
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)) / h ** 2
    return sp.csr_matrix(sp.kronsum(T, T))


def _solve(A, b, size, **kw):
    def job(comm):
        s = RowSolver(A, comm=comm, **kw)
        r = s.iterate(b, rtol=1e-10, maxiter=2000)
        return r.converged, s.gather(r.x), s.coarse
    return on_threads(size, job)[0]


def test_complex_systems_over_the_ranks_equal_spsolve():
    L = _laplacian()
    n = L.shape[0]
    rng = np.random.default_rng(0)
    b = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    helm = sp.csr_matrix(L - 100 * (1 - 0.1j) * sp.identity(n))   # complex symmetric
    S = sp.diags(np.ones(n - 1), 1, shape=(n, n))
    herm = sp.csr_matrix(L + 30j * (S - S.T))                       # Hermitian positive
    for A, size, kw in ((helm, 3, {"method": "gmres", "precond": "ilu"}),
                        (helm, 2, {"method": "bicgstab", "precond": "amg"}),
                        (herm, 3, {"method": "cg", "precond": "jacobi"}),
                        (herm, 2, {"method": "cg", "precond": "amg"})):
        ok, x, coarse = _solve(A, b, size, **kw)
        ref = spla.spsolve(A.tocsc(), b)
        assert ok and coarse == "none", kw
        assert np.abs(x - ref).max() <= 1e-7 * np.abs(ref).max(), kw


def test_what_a_complex_row_split_cannot_do_is_refused_in_one_line():
    L = _laplacian(6)
    helm = sp.csr_matrix(L - 100 * (1 - 0.1j) * sp.identity(L.shape[0]))
    with pytest.raises(ValueError, match="method='cg' needs a Hermitian matrix"):
        RowSolver(helm, method="cg", precond="jacobi")
    # round 47 (h4): an overlap and a coarse level take a complex matrix
    # (test_complex_rows_r47h4.py); COCG over the ranks refuses a non-symmetric one
    with pytest.raises(ValueError, match="method='cocg' needs a complex symmetric matrix"):
        RowSolver(sp.csr_matrix(helm + sp.diags(np.ones(35), 1, shape=helm.shape)),
                  method="cocg")
    with pytest.raises(ValueError, match="b is complex and A is real"):
        RowSolver(L, method="cg").iterate(np.ones(L.shape[0]) * 1j)

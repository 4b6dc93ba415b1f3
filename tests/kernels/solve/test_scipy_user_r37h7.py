"""Round 37 (h7): a SciPy user's edge cases against SciPy itself (docs/solve.md "Round 37")."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import skiff
from skiff.kernels.solve import SolveError


def _lap(n=30):
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tocsr()


@pytest.mark.parametrize("method", ["cg", "gmres", "minres", "bicgstab"])
def test_an_empty_system_gives_scipys_empty_x(method):
    A = sp.csr_matrix((0, 0))
    x_ref, info_ref = getattr(sla, method)(A, np.zeros(0))
    x, info = skiff.solve(A, np.zeros(0), method=method)
    assert x.shape == x_ref.shape == (0,) and info == info_ref == 0
    op = sla.LinearOperator((0, 0), matvec=lambda v: v, dtype=float)   # r47 h12: no entries
    x, info = skiff.solve(op, np.zeros(0), method=method)
    assert x.shape == (0,) and info == 0
    with pytest.raises(ValueError, match="b has 3 entries but the system has 0 unknowns"):
        skiff.solve(A, np.ones(3), method=method)


@pytest.mark.parametrize("method", ["cg", "minres", "bicgstab", "gmres"])
def test_maxiter_0_returns_x0_as_scipy(method):
    A, b = _lap(), np.ones(30)
    x0 = np.linspace(0, 1, 30)
    sol = skiff.solve(A, b, x0=x0, maxiter=0, method=method)
    if method != "gmres":   # SciPy's gmres raises UnboundLocalError at maxiter=0
        x_ref, _ = getattr(sla, method)(A, b, x0=x0, maxiter=0)
        np.testing.assert_array_equal(sol.x, x_ref)
    np.testing.assert_array_equal(sol.x, x0)
    # x0 is not a solution: not converged (SciPy's cg says info 0 here, its for-else
    # returning maxiter as the iterations done), the status says why
    assert sol.iterations == 0 and not sol.converged and tuple(sol)[1] != 0
    assert "maxiter=0: no iteration ran" in sol.status
    with pytest.raises(SolveError, match="maxiter=0"):
        skiff.solve(A, b, x0=x0, maxiter=0, method=method, strict=True)
    exact = sla.spsolve(A.tocsc(), b)
    x, info = skiff.solve(A, b, x0=exact, maxiter=0, method=method)
    assert info == 0 and np.array_equal(x, exact)


@pytest.mark.parametrize("compress", ["gzip", "bz2"])
def test_a_compressed_matrix_market_file_is_read_as_mmread_reads_it(tmp_path, compress):
    import bz2
    import gzip

    import scipy.io as sio

    from skiff.kernels.solve.entry import run_matrix_file
    from skiff.kernels.solve.files import is_matrix_file, read_matrix, read_vector

    A = (_lap(40) + 0.5 * sp.eye(40) - 0.1 * sp.eye(40, k=5) - 0.1 * sp.eye(40, k=-5)).tocsr()
    b = np.arange(40.0)
    opener, ext = (gzip.open, ".gz") if compress == "gzip" else (bz2.open, ".bz2")
    for name, value, kw in (("A.mtx", A, {"symmetry": "symmetric"}), ("b.mtx", b[:, None], {})):
        sio.mmwrite(str(tmp_path / name), value, **kw)
        with open(tmp_path / name, "rb") as f, opener(tmp_path / (name + ext), "wb") as g:
            g.write(f.read())
    path = tmp_path / ("A.mtx" + ext)
    (tmp_path / "A.txt.gz").write_bytes(b"")
    assert is_matrix_file(path) and not is_matrix_file(tmp_path / "A.txt.gz")
    ref = sio.mmread(str(path)).tocsr()
    assert (read_matrix(path) != ref).nnz == 0 and (ref != A).nnz == 0
    np.testing.assert_array_equal(read_vector(tmp_path / ("b.mtx" + ext), 40), b)
    sol = run_matrix_file({"problem": str(path), "b": str(tmp_path / ("b.mtx" + ext)),
                           "method": "cg", "precond": "none"})
    np.testing.assert_allclose(sol.x, sla.spsolve(A.tocsc(), b), rtol=1e-6)

"""%solve with the notebook objects a user has: sparse arrays, LinearOperators, dense arrays,
(n, 1) right-hand sides, complex matrices (solved as by SciPy)."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def _lap(n):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()


@pytest.mark.parametrize("wrap,precond", [(sp.csc_array, "amg"), (sp.coo_matrix, "jacobi"),
                                          (lambda a: spla.LinearOperator(   # r47 h12: no entries
                                              a.shape, matvec=a.dot, dtype=float), "none"),
                                          (lambda a: a.toarray(), "auto")])
def test_magic_with_user_objects(shell, wrap, precond):
    A = _lap(16)
    b = np.random.default_rng(3).standard_normal((A.shape[0], 1))
    shell.user_ns.update(Au=wrap(A), bu=b)
    job = shell.run_line_magic("solve", f"Au bu --precond {precond} --rtol 1e-10 --wait")
    assert job.status == "done", job.error
    ref = spla.spsolve(A.tocsc(), b.ravel())
    np.testing.assert_allclose(job.value.x, ref, atol=1e-8 * np.abs(ref).max())
    assert job.result["status"] == "converged"


def test_magic_solves_complex_as_scipy(shell):
    A = (_lap(8) + 0.5j * sp.eye(64)).tocsr()
    b = np.ones(64) - 0.5j
    shell.user_ns.update(Ac=A, bc=b)
    job = shell.run_line_magic("solve", "Ac bc --rtol 1e-10 --wait")
    assert job.status == "done", job.error
    x_ref, info = spla.gmres(A, b, rtol=1e-10)
    assert info == 0 and job.value.x.dtype == x_ref.dtype == np.complex128
    np.testing.assert_allclose(job.value.x, spla.spsolve(A.tocsc(), b), rtol=1e-8)
    with pytest.raises(UsageError, match="complex"):   # Chebyshev builds on real matrices
        shell.run_line_magic("solve", "Ac bc --precond chebyshev --wait")
    job = shell.run_line_magic("solve", "Ac bc --precond amg --rtol 1e-10 --wait")   # r27
    assert job.status == "done", job.error
    np.testing.assert_allclose(job.value.x, spla.spsolve(A.tocsc(), b), rtol=1e-8)

"""Several right-hand sides at once (``b`` of shape ``(n, k)``: load cases), as SciPy's
``spsolve(A, B)`` returns ``(n, k)``; before round 29 skiff refused ``(n, k)`` and named
``solve_many`` (a list)."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff import Solver


def _poisson(n=30):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.identity(n), T) + sp.kron(T, sp.identity(n))).tocsr()


@pytest.mark.parametrize("form", ["dense", "csr", "float32"])
def test_columns_match_spsolve(form):
    A = _poisson()
    B = np.random.default_rng(0).standard_normal((A.shape[0], 3))
    ref = spla.spsolve(A.tocsc(), B)
    given = {"dense": B, "csr": sp.csr_matrix(B), "float32": B.astype(np.float32)}[form]
    Af = A.astype(np.float32) if form == "float32" else A
    sol = skiff.solve(Af, given, rtol=1e-10)
    x, info = sol
    assert x.shape == B.shape and info == 0 and sol.converged
    assert x.dtype == (np.float32 if form == "float32" else np.float64)
    tol = 1e-5 if form == "float32" else 1e-8
    assert np.abs(x - ref).max() <= tol * np.abs(ref).max()
    assert len(sol.columns) == 3
    assert sol.iterations == max(c.iterations for c in sol.columns)
    assert sol.relative_residual == max(c.relative_residual for c in sol.columns)


def test_x0_per_column_and_its_shape_checked():
    A = _poisson(20)
    B = np.random.default_rng(1).standard_normal((A.shape[0], 2))
    ref = spla.spsolve(A.tocsc(), B)
    s = Solver(A)
    warm = s.solve(B, x0=ref, rtol=1e-8)         # the answer as x0: nothing left to do
    assert warm.iterations == 0 and np.allclose(warm.x, ref)
    with pytest.raises(ValueError, match=r"x0 has shape \(400,\).*\(400, 2\)"):
        s.solve(B, x0=ref[:, 0])


def test_a_column_that_fails_is_named():
    A = _poisson(20)
    B = np.random.default_rng(2).standard_normal((A.shape[0], 2))
    B[:, 0] = 0.0
    B[5, 0] = 1.0
    sol = Solver(A, precond="none").solve(B, rtol=1e-12, maxiter=3)
    ref = np.column_stack([spla.cg(A, B[:, j], rtol=1e-12, maxiter=3)[0] for j in range(2)])
    assert not sol.converged and sol.status.startswith("column 0 of 2: maxiter")
    assert sol.scipy_info == 3
    np.testing.assert_allclose(sol.x, ref, rtol=1e-9, atol=1e-12)   # SciPy's cg's iterates


def test_a_column_solution_is_no_grid():
    A = _poisson(10)
    sol = skiff.solve(A, np.ones((100, 2)))
    assert not sol.on_grid
    with pytest.raises(ValueError, match="not a grid"):
        sol.plot("field")

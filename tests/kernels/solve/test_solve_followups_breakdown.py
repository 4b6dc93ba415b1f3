"""A BiCGStab breakdown stops short as SciPy's does: ``x, info = skiff.solve(...)`` gives
SciPy's negative info and its iterate (scipy.sparse.linalg.bicgstab is the oracle), the
Solution says not converged with the remedy, and ``strict=True`` raises SolveError."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import skiff
from skiff.kernels.solve import SolveError, Solver

# small integer systems on which BiCGStab breaks down exactly (a zero inner product)
RHO = (np.array([[1.0, 0, -1, -1], [-2, -2, -2, -2], [2, 1, 2, 0], [1, 2, 1, 1]]),
       np.array([0.0, 0, 1, -1]))   # rho = rhat.r = 0 at iteration 2: SciPy's -10
RV = (np.array([[-2.0, -2], [1, 0]]), np.array([0.0, -1]))   # rhat.Ap = 0 at once: -11


@pytest.mark.parametrize("system", [RHO, RV], ids=["rho", "rhat.v"])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_scipy_pair_gets_scipys_negative_info_and_iterate(system, sparse):
    A, b = system
    A = sp.csr_matrix(A) if sparse else A
    ref, ref_info = sla.bicgstab(A, b, rtol=1e-10)
    assert ref_info < 0   # the oracle breaks down on it
    x, info = skiff.solve(A, b, method="bicgstab", precond=None, rtol=1e-10)
    assert info == ref_info
    assert np.allclose(x, ref, rtol=1e-12, atol=1e-14)
    # the Solver's own solve, unpacked the same way
    x2, info2 = Solver(A, method="bicgstab", precond="none").solve(b, rtol=1e-10)
    assert info2 == ref_info and np.allclose(x2, ref, rtol=1e-12, atol=1e-14)
    # and the matrix is solvable: the direct answer differs from where BiCGStab stopped
    exact = np.linalg.solve(np.asarray(A.toarray() if sparse else A), b)
    assert not np.allclose(x, exact)


def test_the_solution_says_so_and_strict_raises():
    A, b = RV
    sol = skiff.solve(A, b, method="bicgstab", precond=None)
    assert not sol.converged and sol.breakdown == sla.bicgstab(A, b)[1] == -11
    assert "breakdown" in sol.status and "gmres" in sol.status   # the remedy
    with pytest.raises(SolveError, match="breakdown.*gmres"):
        skiff.solve(A, b, method="bicgstab", precond=None, strict=True)
    with pytest.raises(SolveError, match="breakdown"):
        Solver(A, method="bicgstab", precond="none").solve(b, strict=True)
    # a notebook cell's top level unpacks the same way
    ns = {"skiff": skiff, "A": A, "b": b}
    exec(compile("x, info = skiff.solve(A, b, method='bicgstab', precond=None)", "<cell>",
                 "exec"), ns)
    assert ns["info"] == -11

"""Round 40 (h10): ``Solver(A, precond='ilu')`` / ``skiff.solve(A, b, precond='ilu')`` on one
rank: ILU(0) on A's own pattern (IC(0) in ``L D L^T`` form when A is symmetric, so CG takes
it), the kernel of the row split's block Jacobi (``ilu0.py``). It was refused ("use
M=spilu(A.tocsc())"). Oracles: SciPy's ``cg`` / ``gmres`` with ``M`` the dense textbook
ILU(0) (Saad, Algorithm 10.4) applied as ``(L U)^-1``; SciPy's ``spsolve`` for x."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import Solver

from .ilu_reference import dense_ilu0


def _laplacian(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.kronsum(T, T).tocsr()


def _convection(m=24, peclet=8.0):
    T = sp.diags([-1 - peclet / 2, 2.0, -1 + peclet / 2], [-1, 0, 1], shape=(m, m))
    return (sp.kron(sp.identity(m), T) + sp.kron(T, sp.identity(m))).tocsr()


def _textbook_ilu0_m(A):
    """M = (L U)^-1 from a dense ILU(0) (Saad 10.4), as a SciPy LinearOperator."""
    a = dense_ilu0(A)
    n = a.shape[0]
    LU = (np.tril(a, -1) + np.eye(n)) @ np.triu(a)
    return spla.LinearOperator(A.shape, matvec=lambda r: np.linalg.solve(LU, r))


def test_cg_with_ic0_is_scipys_cg_with_the_textbook_ilu0():
    A = (_laplacian(14) + sp.diags(np.random.default_rng(1).uniform(0, 0.3, 196))).tocsr()
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    hist = [np.linalg.norm(b)]
    spla.cg(A, b, rtol=1e-10, maxiter=400, M=_textbook_ilu0_m(A),
            callback=lambda xk: hist.append(np.linalg.norm(b - A @ xk)))
    solver = Solver(A, precond="ilu")
    sol = solver.solve(b, rtol=1e-10)
    assert sol.method == "cg" and sol.precond == "ilu" and sol.converged
    assert "IC(0)" in solver.describe()
    ours = np.asarray(sol.residuals, dtype=float)
    assert abs(len(ours) - len(hist)) <= 1, (len(ours), len(hist))
    k = min(len(ours), len(hist)) - 2   # the last step: round-off near the tolerance
    assert np.allclose(np.log10(ours[:k]), np.log10(hist[:k]), atol=1e-4)
    jac = Solver(A, method="cg", precond="jacobi").solve(b, rtol=1e-10)
    assert sol.iterations * 2 <= jac.iterations, (sol.iterations, jac.iterations)


@pytest.mark.parametrize("name", ["ilu", "ILU0", "ichol"])
def test_gmres_with_ilu0_solves_a_convection_matrix_as_scipys(name):
    A = _convection()
    b = np.ones(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    sol = skiff.solve(A, b, precond=name, rtol=1e-10)
    assert sol.method == "gmres" and sol.precond == "ilu" and sol.converged
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
    count = []
    spla.gmres(A, b, rtol=1e-10, restart=30, M=_textbook_ilu0_m(A),
               callback=lambda r: count.append(r), callback_type="pr_norm")
    assert sol.iterations <= len(count) + 3, (sol.iterations, len(count))


def test_what_ilu0_cannot_factor_is_one_line():
    A = _laplacian(6).tolil()
    A[7, 7] = 0.0
    A = A.tocsr()
    A.eliminate_zeros()
    with pytest.raises(ValueError, match=r"precond='ilu': row 7 has no diagonal entry"):
        Solver(A, method="gmres", precond="ilu")
    with pytest.raises(ValueError, match=r"precond='ilu' factors a matrix's entries, and "
                                         r"this is a grid problem"):
        Solver(skiff.kernels.solve.poisson((16, 16)), precond="ilu")
    L6 = _laplacian(6)   # round 47 (h12): an operator without entries (aslinearoperator is L6)
    op = spla.LinearOperator(L6.shape, matvec=lambda v: L6 @ v, dtype=float)
    with pytest.raises(ValueError, match="A is a function / LinearOperator"):
        Solver(op, precond="ilu")
    # round 45 (h14): a complex matrix is factored (complex128), no longer refused
    Ac = (_laplacian(6) * (1 + 1j)).tocsr()
    bc = np.arange(Ac.shape[0]) * (1 - 2j)
    got = skiff.solve(Ac, bc, method="gmres", precond="ilu", rtol=1e-10)
    ref = spla.spsolve(Ac.tocsc(), bc)
    assert np.abs(got.x - ref).max() <= 1e-8 * np.abs(ref).max()
    with pytest.raises(ValueError, match=r"precond='ilu' \(ILU\(0\).*spilu"):
        Solver(_laplacian(6), precond="spilu")

"""Round 47 (h4): a singular Neumann Laplacian given as a function or a SciPy
``LinearOperator`` (no matrix entries). A matrix's constant null space was found (rows
summing to zero) and an incompatible b refused in one line or projected with
``compatibility='project'``; an operator's was not: the incompatible b ran MINRES to 'no
solution', and ``compatibility='project'`` was ignored (|r|/|b| 1.4e-2, the message asking
for the option already given). Oracle: SciPy's ``cg`` on the matrix with b's mean removed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff


def _neumann(n=12):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    T[0, 0] = T[-1, -1] = 1.0
    T = T.tocsr()
    return sp.csr_matrix(sp.kronsum(T, T))


def test_a_neumann_operator_finds_its_constant_null_space():
    A = _neumann()
    n = A.shape[0]
    b = np.random.default_rng(0).standard_normal(n)   # mean 0.02: incompatible
    ops = (spla.LinearOperator(A.shape, matvec=lambda x: A @ x, dtype=float),
           lambda x: A @ x)
    for op in ops:
        with pytest.raises(ValueError, match=r"singular .* b is not compatible \(mean of b"):
            skiff.solve(op, b)
    ref, info = spla.cg(A, b - b.mean(), rtol=1e-12, maxiter=2000)
    assert info == 0
    ref -= ref.mean()
    for op in ops:
        s = skiff.solve(op, b, compatibility="project")
        x = np.asarray(s.x).ravel()
        assert s.converged and abs(x.mean()) <= 1e-12 * np.abs(x).max()
        assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()
    # a nonsingular operator is not taken for one (a shift: A 1 = 0.1)
    s = skiff.solve(spla.LinearOperator(A.shape, matvec=lambda x: A @ x + 0.1 * x,
                                        dtype=float), b)
    assert s.converged
    ref = spla.spsolve((A + 0.1 * sp.identity(n)).tocsc(), b)
    assert np.abs(np.asarray(s.x).ravel() - ref).max() <= 1e-6 * np.abs(ref).max()





def _said_singular(L, b) -> str:
    """CG without a preconditioner on ``L x = b``: its status, or the SolveError's text."""
    from skiff.kernels.solve.krylov import SolveError

    try:
        s = skiff.solve(L, b, method="cg", precond="none")   # no AMG: numpy's rounding only
    except SolveError as e:
        return str(e)
    assert not s.converged and s.true_residual > 1e-2, s
    return s.status


def test_cg_on_b_outside_a_singular_range_says_so():
    """A normalized graph Laplacian (its null vector ``D^1/2 1``, not the constant) with b at
    random. With self-loops in W, CG's recurrence passed 1e-8 with the true |b - Ax|/|b| 4.3
    (with AMG 5.8) and the status blamed float64 (``a tolerance near 1e-16 times the
    condition number ...``); without them CG stopped on ``the matrix is not positive definite
    (p.Ap = -1.0e+13 at iteration 476)``. SciPy's ``minres`` shows no x solves either (its
    least-squares residual stays above 1e-2); b in A's range (``eigh``'s null vector)
    converges."""
    import scipy.sparse.csgraph as csgraph

    from skiff.kernels.solve.solver import attainable_status

    b = np.random.default_rng(0).standard_normal(400)
    for loops in (True, False):
        W = sp.random(400, 400, density=0.02, random_state=1)
        W = sp.csr_matrix(W + W.T + sp.diags(np.ones(399), 1) + sp.diags(np.ones(399), -1))
        if not loops:
            W.setdiag(0)
            W.eliminate_zeros()
        L = sp.csr_matrix(csgraph.laplacian(W, normed=True))
        x_ls = spla.minres(L, b, rtol=1e-10, maxiter=2000)[0]
        assert np.linalg.norm(b - L @ x_ls) >= 1e-2 * np.linalg.norm(b)
        said = _said_singular(L, b)
        assert ("singular with b outside its range" in said
                or "looks singular (positive semidefinite)" in said), said
    assert "as far as float64 goes" in attainable_status(1e-6, 1e-8, 1.0)   # rounding's
    v = np.linalg.eigh(L.toarray())[1][:, 0]
    bc = b - (v @ b) * v   # in A's range
    s = skiff.solve(L, bc)
    x = np.asarray(s.x).ravel()
    assert s.converged and np.linalg.norm(bc - L @ x) <= 1e-7 * np.linalg.norm(bc)

"""A matrix-free operator (scipy LinearOperator) preconditioned by skiff's AMG built on an
assembled matrix near it, against SciPy's cg with the same M and spsolve."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff


def _lap(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return sp.kronsum(T, T).tocsr()


def test_the_refusal_names_the_way_to_pass_it():
    L = _lap(10)   # round 47 (h12): without entries (aslinearoperator(L) is L itself now)
    op = spla.LinearOperator(L.shape, matvec=lambda v: L @ v, dtype=float)
    with pytest.raises(ValueError, match=r"aspreconditioner\(\)"):
        skiff.Solver(op, precond="amg")


def test_amg_of_an_approximation_preconditions_the_operator_as_scipys_cg():
    n = 40
    K = _lap(n)
    c = 1e-3 * (1.0 + 0.3 * np.sin(np.arange(n * n)))   # the operator: K + diag(c), matrix-free
    op = spla.LinearOperator(K.shape, matvec=lambda v: K @ v + c * v, dtype=float)
    M = skiff.Solver(K + 1e-3 * sp.identity(n * n), precond="amg").aspreconditioner()
    b = np.cos(np.arange(n * n))
    sol = skiff.solve(op, b, precond=M, rtol=1e-10)
    count = [0]
    x, info = spla.cg(op, b, M=M, rtol=1e-10,
                      callback=lambda xk: count.__setitem__(0, count[0] + 1))
    ref = spla.spsolve((K + sp.diags(c)).tocsc(), b)
    assert sol.converged and info == 0
    assert abs(sol.iterations - count[0]) <= 1               # SciPy's cg, same M
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
    plain = skiff.solve(op, b, precond="none", rtol=1e-10)
    assert sol.iterations < plain.iterations / 3

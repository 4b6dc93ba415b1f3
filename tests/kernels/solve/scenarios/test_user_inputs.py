"""A demanding user's inputs to ``skiff.solve`` / ``Solver``: every scipy.sparse format (matrices
and arrays), LinearOperator, callables, dense arrays, float32, (n, 1) right-hand sides, complex
(solved as SciPy does), x0, callbacks and stopping exactly as scipy.sparse.linalg.cg."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import SolveError, Solver


def _lap2d(n):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), t) + sp.kron(t, sp.eye(n))).tocsr()


A = _lap2d(24)
N = A.shape[0]
B = np.random.default_rng(0).standard_normal(N)
REF = spla.spsolve(A.tocsc(), B)


def _operator(M):
    """An operator without entries (round 47 h12: ``aslinearoperator(M)`` is M itself now)."""
    return spla.LinearOperator(M.shape, matvec=lambda v: M @ v, dtype=M.dtype)


def _close(x, ref=REF, tol=1e-7):
    x = np.asarray(x).ravel()
    assert np.abs(x - ref).max() <= tol * np.abs(ref).max()


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "dia", "lil", "dok"])
@pytest.mark.parametrize("kind", ["matrix", "array"])
def test_every_sparse_format(fmt, kind):
    M = (A if kind == "matrix" else sp.csr_array(A)).asformat(fmt)
    sol = skiff.solve(M, B, rtol=1e-10)
    assert sol.converged and sol.status == "converged" and sol.precond == "amg"
    _close(sol.x)


@pytest.mark.parametrize("precond", ["none", "jacobi", "chebyshev", "amg"])
def test_preconditioners_on_a_csc_array(precond):
    sol = skiff.solve(sp.csc_array(A), B, precond=precond, rtol=1e-10)
    assert sol.converged
    _close(sol.x)


@pytest.mark.parametrize("method", ["cg", "pipecg", "gmres", "bicgstab"])
def test_linear_operator_and_callable(method):
    op = _operator(A)
    sol = skiff.solve(op, B, method=method, rtol=1e-10, maxiter=2000)
    assert sol.converged and sol.precond == "none"
    _close(sol.x, tol=1e-6)
    # a plain callable: n comes from b
    sol2 = skiff.solve(lambda v: A @ v, B, method=method, rtol=1e-10, maxiter=2000)
    _close(sol2.x, tol=1e-6)


def test_matrix_free_errors_are_clear():
    op = _operator(A)
    with pytest.raises(ValueError, match="needs the matrix entries"):
        Solver(op, precond="amg")
    with pytest.raises(ValueError, match="needs a matrix"):
        Solver(op, method="direct")
    with pytest.raises(ValueError, match="n="):
        Solver(lambda v: A @ v)
    with pytest.raises(ValueError, match="returned"):
        skiff.solve(lambda v: v[:-1], B, precond="none")


def test_dense_float32_int_and_column_b():
    small = _lap2d(6)
    b = np.arange(36.0)
    ref = np.linalg.solve(small.toarray(), b)
    for M, bb in ((small.toarray(), b), (small.toarray().astype(np.float32), b.astype(np.float32)),
                  (small.astype(np.int64), b.astype(np.int32)), (small, b[:, None])):
        sol = skiff.solve(M, bb, rtol=1e-12)
        x_ref, _ = spla.cg(M, bb.ravel(), rtol=1e-5)   # scipy's dtype: A's and b's result
        assert sol.converged and sol.x.dtype == x_ref.dtype and sol.x.shape == (36,)
        _close(sol.x, ref, tol=1e-9 if sol.x.dtype == np.float64 else 1e-6)


def test_complex_is_solved_as_scipy():
    Ac, Bc = A.astype(np.complex128), B + 1j
    ref = spla.spsolve(Ac.tocsc(), Bc)
    for system, rhs, x0 in ((Ac, B, None), (A, Bc, None), (Ac, Bc, np.zeros(N, complex)),
                            (_operator(Ac), Bc, None)):
        x_ref, info = spla.cg(system, rhs, x0=x0, rtol=1e-10)
        sol = skiff.solve(system, rhs, x0=x0, rtol=1e-10)
        assert info == 0 and sol.converged and sol.x.dtype == x_ref.dtype == np.complex128
        _close(sol.x, spla.spsolve(Ac.tocsc(), rhs), tol=1e-8)
        _close(x_ref, spla.spsolve(Ac.tocsc(), rhs), tol=1e-8)
    _close(skiff.solve(Ac, Bc, rtol=1e-10).x, ref, tol=1e-8)
    _close(skiff.solve(Ac, Bc, precond="amg", rtol=1e-10).x, ref, tol=1e-8)   # complex AMG
    with pytest.raises(ValueError, match="complex"):   # Chebyshev is real: say what runs
        skiff.solve(Ac, Bc, precond="chebyshev")


def test_x0_is_used():
    sol = skiff.solve(A, B, x0=REF, rtol=1e-8)
    assert sol.converged and sol.iterations == 0
    near = REF + 1e-6 * np.random.default_rng(1).standard_normal(N)
    s1 = skiff.solve(A, B, x0=near[:, None], precond="none", rtol=1e-10)
    s0 = skiff.solve(A, B, precond="none", rtol=1e-10)
    assert s1.converged and s1.iterations < s0.iterations
    with pytest.raises(ValueError, match="x0 has"):
        skiff.solve(A, B, x0=np.zeros(N - 1))


@pytest.mark.parametrize("rtol,atol", [(1e-6, 0.0), (1e-3, 0.0), (0.0, 1e-4), (1e-8, 1e-2)])
def test_stopping_and_callback_match_scipy_cg(rtol, atol):
    """Unpreconditioned CG: the same criterion |r| <= max(rtol |b|, atol) on the recurrence
    residual gives scipy's iteration count and iterates, callback once per iteration."""
    ours, theirs = [], []
    sol = skiff.solve(A, B, precond="none", rtol=rtol, atol=atol,
                      callback=lambda xk: ours.append(np.array(xk)))
    x, info = spla.cg(A, B, rtol=rtol, atol=atol, callback=lambda xk: theirs.append(xk.copy()))
    assert info == 0 and sol.converged and sol.scipy_info == 0
    assert len(ours) == len(theirs) == sol.iterations
    np.testing.assert_allclose(ours[-1], theirs[-1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sol.x, x, rtol=1e-9, atol=1e-12)


def test_maxiter_gives_status_not_exception():
    sol = skiff.solve(A, B, precond="none", rtol=1e-12, maxiter=5)
    x, info = spla.cg(A, B, rtol=1e-12, maxiter=5)
    assert not sol.converged and sol.iterations == 5 and info == 5 == sol.scipy_info
    assert sol.status.startswith("maxiter") and "maxiter=5" in sol.status
    np.testing.assert_allclose(sol.x, x, rtol=1e-9, atol=1e-12)
    with pytest.raises(SolveError, match="did not converge"):
        skiff.solve(A, B, precond="none", rtol=1e-12, maxiter=5, strict=True)


def test_many_right_hand_sides_reuse_the_setup():
    solver = Solver(A, method="cg", precond="amg")
    setup = solver.setup_time
    Bs = np.random.default_rng(2).standard_normal((N, 4))
    sols = solver.solve_many(Bs, rtol=1e-10)
    ref = spla.spsolve(A.tocsc(), Bs)
    for j, s in enumerate(sols):
        assert s.converged and s.setup_time == setup
        _close(s.x, ref[:, j])
    whole = solver.solve(Bs, rtol=1e-10)   # (n, k) at once: x (n, k), as spsolve's (round 29)
    assert whole.x.shape == Bs.shape and whole.converged
    _close(whole.x, ref.ravel())

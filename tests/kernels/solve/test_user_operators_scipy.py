"""A SciPy user's own operators and preconditioners against scipy.sparse.linalg and pyamg.

SciPy's ``M`` (a preconditioner approximating A^-1: a LinearOperator, a callable, a matrix)
could not be given to skiff before (2026-12-05); now ``precond=M`` preconditions every Krylov
method, and CG with it stops at the iteration scipy's ``cg`` with the same ``M`` stops at.
SciPy's keyword ``M=`` is taken as ``precond=``."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import skiff
from skiff.kernels.solve.problems import poisson
from skiff.kernels.solve.solver import SolveError, Solver

pyamg = pytest.importorskip("pyamg")


def _laplacian(side=20):
    return pyamg.gallery.poisson((side, side), format="csr")


def _rhs(n, seed=1):
    return np.random.default_rng(seed).random(n)


def _scipy_cg_iterations(A, b, **kw):
    count = [0]
    x, info = sla.cg(A, b, callback=lambda xk: count.__setitem__(0, count[0] + 1), **kw)
    assert info == 0
    return x, count[0]


def test_jacobi_linear_operator_as_M_matches_scipy_cg():
    A = _laplacian()
    b = _rhs(A.shape[0])
    d = A.diagonal()
    M = sla.LinearOperator(A.shape, matvec=lambda r: r / d)
    x_ref, its_ref = _scipy_cg_iterations(A, b, rtol=1e-8, M=M)
    sol = skiff.solve(A, b, method="cg", precond=M, rtol=1e-8)
    assert sol.converged and sol.precond == "user"
    assert sol.iterations == its_ref
    exact = sla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - exact) <= 1e-6 * np.linalg.norm(exact)
    assert np.linalg.norm(sol.x - x_ref) <= 1e-6 * np.linalg.norm(exact)


def test_pyamg_preconditioner_as_M_matches_scipy_and_pyamg():
    A = _laplacian(24)
    b = _rhs(A.shape[0], 2)
    ml = pyamg.smoothed_aggregation_solver(A)
    M = ml.aspreconditioner(cycle="V")
    _, its_ref = _scipy_cg_iterations(A, b, rtol=1e-8, M=M)
    sol = skiff.solve(A, b, precond=M, rtol=1e-8)          # auto: CG for this SPD matrix
    assert sol.converged and sol.method == "cg"
    assert sol.iterations == its_ref
    x_pyamg = ml.solve(b, tol=1e-10, accel="cg")
    assert np.linalg.norm(sol.x - x_pyamg) <= 1e-6 * np.linalg.norm(x_pyamg)
    # SciPy's M= keyword is ours: the same iterations
    assert skiff.solve(A, b, M=M, rtol=1e-8).iterations == its_ref


@pytest.mark.parametrize("method", ["gmres", "bicgstab", "pipecg"])
@pytest.mark.parametrize("kind", ["callable", "sparse", "dense"])
def test_user_M_forms_with_every_krylov_method(method, kind):
    A = _laplacian(12)
    n = A.shape[0]
    b = _rhs(n, 3)
    inv_d = 1.0 / A.diagonal()
    M = {"callable": lambda r: inv_d * r, "sparse": sp.diags(inv_d).tocsr(),
         "dense": np.diag(inv_d)}[kind]
    sol = skiff.solve(A, b, method=method, precond=M, rtol=1e-10)
    assert sol.converged
    exact = sla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - exact) <= 1e-7 * np.linalg.norm(exact)
    # the preconditioner helps as it does SciPy's gmres: fewer iterations than without
    plain = skiff.solve(A, b, method=method, precond="none", rtol=1e-10)
    assert sol.iterations <= plain.iterations


def test_user_M_on_a_matrix_free_operator_and_a_grid():
    A = _laplacian(16)
    n = A.shape[0]
    b = _rhs(n, 4)
    d = A.diagonal()
    op = sla.LinearOperator(A.shape, matvec=lambda v: A @ v)
    M = sla.LinearOperator(A.shape, matvec=lambda r: r / d)
    _, its_ref = _scipy_cg_iterations(op, b, rtol=1e-9, M=M)
    sol = skiff.solve(op, b, method="cg", precond=M, rtol=1e-9)
    assert sol.converged and sol.iterations == its_ref
    # a grid problem: M gets the flat vector of the grid's unknowns
    p = poisson((16, 16))
    G = p.matrix()
    dg = G.diagonal()
    Mg = sla.LinearOperator(G.shape, matvec=lambda r: r / dg)
    _, its_grid = _scipy_cg_iterations(G, p.rhs.ravel(), rtol=1e-9, M=Mg)
    sol = skiff.solve(p, method="cg", precond=Mg, rtol=1e-9)
    assert sol.converged and abs(sol.iterations - its_grid) <= 1
    exact = sla.spsolve(G.tocsc(), p.rhs.ravel())
    assert np.linalg.norm(sol.x - exact) <= 1e-6 * np.linalg.norm(exact)


def test_solver_reuses_the_user_M_and_amg_setup():
    A = _laplacian(16)
    n = A.shape[0]
    calls = [0]

    def M(r):
        calls[0] += 1
        return r / A.diagonal()

    s = Solver(A, method="cg", precond=M)
    built = s.M
    for seed in range(3):
        b = _rhs(n, seed)
        sol = s.solve(b, rtol=1e-9)
        assert s.M is built and sol.converged
        exact = sla.spsolve(A.tocsc(), b)
        assert np.linalg.norm(sol.x - exact) <= 1e-7 * np.linalg.norm(exact)
    assert calls[0] >= 3
    amg = Solver(A, precond="amg")
    hierarchy = amg.M.amg
    B = np.stack([_rhs(n, k) for k in range(3)], axis=1)
    sols = amg.solve_many(B, rtol=1e-9)
    assert amg.M.amg is hierarchy
    exact = sla.spsolve(A.tocsc(), B)
    for j, sol in enumerate(sols):
        assert np.linalg.norm(sol.x - exact[:, j]) <= 1e-7 * np.linalg.norm(exact[:, j])


@pytest.mark.parametrize("kwargs, words", [
    ({"M": sp.eye(3)}, "must be (400, 400)"),
    ({"M": lambda r: r[:3]}, "must return 400 values"),
    ({"M": "jacobi_op", "method": "direct"}, "takes no preconditioner"),
    ({"M": sp.eye(400, dtype=complex)}, "complex"),
    ({"M": lambda r: r * 1j}, "complex"),
    ({"M": 3.0}, "LinearOperator, a callable"),
])
def test_user_M_refusals_name_the_problem(kwargs, words):
    A = _laplacian()
    M = kwargs["M"]
    if isinstance(M, str):
        M = sla.aslinearoperator(sp.diags(1 / A.diagonal()))
    with pytest.raises((ValueError, SolveError)) as exc:
        skiff.solve(A, _rhs(400), method=kwargs.get("method", "cg"), precond=M)
    assert words in str(exc.value)


def test_empty_systems_solve_as_scipy_and_singular_ones_are_refused():
    # 0 unknowns: SciPy's cg returns an empty x with info 0 (round 37; refused before)
    for system in (sp.csr_matrix((0, 0)), lambda v: v):
        x, info = skiff.solve(system, np.zeros(0))
        x_ref, info_ref = sla.cg(sp.csr_matrix((0, 0)), np.zeros(0))
        assert (x.shape, info) == (x_ref.shape, info_ref)
    # [[1, 1], [1, 1]] with b outside its range: scipy's cg returns 1e31 entries, info=20
    A = np.array([[1.0, 1.0], [1.0, 1.0]])
    b = np.array([1.0, 2.0])
    _, info = sla.cg(A, b)
    assert info != 0
    with pytest.raises(SolveError, match="singular"):
        skiff.solve(A, b, method="gmres")


def test_complex_results_of_a_function_are_refused_not_truncated():
    # a function's complex output was written into a real vector: the imaginary part was
    # dropped without a word and a "converged" answer of the wrong system came back
    A = _laplacian(10)
    H = (A + 1j * sp.triu(A, 1) - 1j * sp.tril(A, -1)).tocsr()   # Hermitian
    b = _rhs(A.shape[0])
    for system in (lambda v: H @ v, sla.LinearOperator(A.shape, matvec=lambda v: H @ v,
                                                       dtype=np.float64)):
        with pytest.raises(ValueError, match="complex"):
            skiff.solve(system, b, n=A.shape[0])
    # a list of numbers is what scipy's LinearOperator would make an array of
    sol = skiff.solve(lambda v: list(A @ v), b, rtol=1e-10)
    exact = sla.spsolve(A.tocsc(), b)
    assert sol.converged and np.linalg.norm(sol.x - exact) <= 1e-8 * np.linalg.norm(exact)


@pytest.mark.parametrize("top", [10, 14])
def test_badly_scaled_matrices_with_amg_match_scipy_and_pyamg(top):
    # diagonal 1 ... 1e{top}: AMG's coarsest inverse counted the small eigenvalues as zero
    # (judged against the largest) and CG+AMG broke down (r.Mr = 0); 'auto' then ran GMRES
    # into stagnation with an error of 100 %, where Jacobi (and scipy's cg with it) take 1 step
    n = 300
    d = np.logspace(0, top, n)
    D = sp.diags(d).tocsr()
    b = np.ones(n)
    sol = skiff.solve(D, b, rtol=1e-10)
    assert sol.converged and sol.method == "cg"
    np.testing.assert_allclose(sol.x, sla.spsolve(D.tocsc(), b), rtol=1e-8)
    # a scaled Laplacian S L S (several AMG levels) against pyamg's SA with accel='cg'
    L = _laplacian(24)
    s = sp.diags(np.logspace(0, top / 2, L.shape[0]))
    A = (s @ L @ s).tocsr()
    b = _rhs(A.shape[0], 5)
    exact = sla.spsolve(A.tocsc(), b)
    ref = pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-10, accel="cg", maxiter=500)
    sol = skiff.solve(A, b, method="cg", precond="amg", rtol=1e-10, maxiter=500)
    assert sol.converged
    err = np.linalg.norm(sol.x - exact) / np.linalg.norm(exact)
    err_ref = np.linalg.norm(ref - exact) / np.linalg.norm(exact)
    assert err <= max(10 * err_ref, 1e-8)


def test_solver_update_rebuilds_for_new_values_of_the_same_pattern():
    # new values, same pattern (a time step): update() sets up again with the same options;
    # a dense matrix was copied at setup, so editing it in place was not seen at all
    L = _laplacian(16)
    n = L.shape[0]
    b = _rhs(n, 7)
    dense = L.toarray()
    s = Solver(dense, precond="amg", restart=20)
    first = s.solve(b, rtol=1e-10)
    np.testing.assert_allclose(first.x, sla.spsolve(L.tocsc(), b), rtol=1e-7)
    shifted = L + sp.diags(np.linspace(1.0, 50.0, n))           # same pattern, new values
    assert s.update(shifted) is s and s.restart == 20 and s.precond_name == "amg"
    sol = s.solve(b, rtol=1e-10)
    assert sol.converged
    np.testing.assert_allclose(sol.x, sla.spsolve(shifted.tocsc(), b), rtol=1e-7)
    # a matrix that stopped being symmetric: the cached symmetry is looked at again
    upwind = (shifted + sp.diags(np.full(n - 1, -0.5), -1)).tocsr()
    sol = s.update(upwind).solve(b, rtol=1e-10)
    assert sol.method == "gmres" and sol.converged
    np.testing.assert_allclose(sol.x, sla.spsolve(upwind.tocsc(), b), rtol=1e-7)
    with pytest.raises(ValueError, match="unknowns"):
        s.update(sp.eye(n + 1, format="csr"))


def test_cg_names_a_user_M_that_is_not_positive_definite():
    A = _laplacian(10)
    b = _rhs(A.shape[0])
    # scipy's cg runs on with r.Mr < 0 (with M = -I it is plain CG with the signs flipped);
    # skiff's CG stops at once and says which input is at fault
    neg = sla.LinearOperator(A.shape, matvec=lambda r: -r)
    with pytest.raises(SolveError, match="your preconditioner M must be symmetric positive"):
        skiff.solve(A, b, method="cg", precond=neg)
    # 'auto' goes on with GMRES, which takes any M, and finds SciPy's answer
    sol = skiff.solve(A, b, precond=neg, rtol=1e-10)
    assert sol.method == "gmres" and sol.converged
    np.testing.assert_allclose(sol.x, sla.spsolve(A.tocsc(), b), rtol=1e-7)


_FORMATS = [(kind, fmt) for kind in ("spmatrix", "sparray")
            for fmt in ("csr", "csc", "coo", "bsr", "dia", "lil", "dok")]


@pytest.mark.parametrize("kind, fmt", _FORMATS)
def test_every_sparse_format_stops_where_scipy_cg_stops(kind, fmt):
    L = _laplacian(12)
    A = (L if kind == "spmatrix" else sp.csr_array(L)).asformat(fmt)
    b = _rhs(L.shape[0], 8)
    x_ref, its_ref = _scipy_cg_iterations(A, b, rtol=1e-9)
    sol = skiff.solve(A, b, method="cg", precond="none", rtol=1e-9)
    assert sol.converged and sol.iterations == its_ref
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("form", ["linear_operator", "rmatvec", "callable", "dense", "int",
                                  "float32"])
def test_matrix_free_and_other_dtypes_against_scipy_cg(form):
    L = _laplacian(12)
    n = L.shape[0]
    b = _rhs(n, 9)
    system = {
        "linear_operator": sla.LinearOperator(L.shape, matvec=lambda v: L @ v),
        "rmatvec": sla.LinearOperator(L.shape, matvec=lambda v: L @ v,
                                      rmatvec=lambda v: L.T @ v),
        "callable": lambda v: L @ v,
        "dense": L.toarray(),
        "int": L.astype(np.int64),
        "float32": L.astype(np.float32),
    }[form]
    scipy_system = sla.LinearOperator(L.shape, matvec=system) if form == "callable" else system
    rhs = b.astype(np.float32) if form == "float32" else b
    x_ref, its_ref = _scipy_cg_iterations(scipy_system, rhs, rtol=1e-5)
    sol = skiff.solve(system, rhs, method="cg", precond="none", rtol=1e-5)
    assert sol.converged and sol.x.dtype == x_ref.dtype   # scipy's: A's and b's result type
    if form == "float32":   # scipy iterates in float32, skiff in float64 (rounded at the end)
        exact = sla.spsolve(L.tocsc(), b.astype(np.float32).astype(np.float64))
        rounding = 1e-6 * np.linalg.norm(exact)
        assert np.linalg.norm(sol.x - exact) <= np.linalg.norm(x_ref - exact) + rounding
        deep = skiff.solve(system, rhs, rtol=1e-12)      # float32 data, float64 accuracy
        assert deep.converged and deep.relative_residual <= 1e-11
    else:
        assert sol.iterations == its_ref
        np.testing.assert_allclose(sol.x, x_ref, rtol=1e-7, atol=1e-9)


def test_rtol_atol_maxiter_x0_and_callback_as_scipy():
    A = _laplacian(16)
    n = A.shape[0]
    b = _rhs(n, 10)
    for rtol, atol in ((1e-6, 0.0), (1e-12, 1e-3), (0.5, 0.0), (1e-6, 1e3)):
        _, its = _scipy_cg_iterations(A, b, rtol=rtol, atol=atol)
        sol = skiff.solve(A, b, method="cg", precond="none", rtol=rtol, atol=atol)
        assert sol.iterations == its and sol.converged
    x5, info = sla.cg(A, b, maxiter=5)
    sol = skiff.solve(A, b, method="cg", precond="none", maxiter=5)
    assert (sol.iterations, sol.scipy_info, info) == (5, 5, 5) and not sol.converged
    np.testing.assert_allclose(sol.x, x5, rtol=1e-10)
    # a warm start near the answer: scipy's iteration count, and the same answer
    x0 = sla.spsolve(A.tocsc(), b) + 1e-4 * _rhs(n, 11)
    seen = []
    x_ref, its_ref = _scipy_cg_iterations(A, b, rtol=1e-10, x0=x0)
    sol = skiff.solve(A, b, method="cg", precond="none", rtol=1e-10, x0=list(x0),
                      callback=lambda xk: seen.append(np.array(xk)))
    cold = skiff.solve(A, b, method="cg", precond="none", rtol=1e-10)
    assert sol.iterations == its_ref < cold.iterations
    assert len(seen) == sol.iterations and seen[-1].shape == (n,)
    np.testing.assert_allclose(seen[-1], sol.x)
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-7)


def test_x_info_unpacks_as_scipy():
    A = _laplacian(12)
    b = _rhs(A.shape[0], 12)
    for maxiter in (3, None):
        x_ref, info_ref = sla.cg(A, b, rtol=1e-9, maxiter=maxiter)
        x, info = skiff.solve(A, b, method="cg", precond="none", rtol=1e-9, maxiter=maxiter)
        assert info == info_ref
        np.testing.assert_allclose(x, x_ref, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("A", [np.array([[3.0]]), np.array([[4.0, 1.0], [1.0, 3.0]]),
                               np.array([[4.0, 1.0], [-1.0, 3.0]])])
@pytest.mark.parametrize("method", ["auto", "gmres", "bicgstab", "direct"])
def test_tiny_systems_against_numpy(A, method):
    b = np.arange(1.0, A.shape[0] + 1.0)
    sol = skiff.solve(A, b, method=method, rtol=1e-12)
    x_ref, info = sla.gmres(A, b, rtol=1e-12)
    assert info == 0 and sol.converged
    np.testing.assert_allclose(sol.x, np.linalg.solve(A, b), rtol=1e-10)
    np.testing.assert_allclose(sol.x, x_ref, rtol=1e-8)


def test_an_incomplete_lu_as_preconditioner_as_scipy_users_build_it():
    # scipy users write M = LinearOperator(A.shape, spilu(A).solve); the SuperLU object itself
    # (its .solve applied) is taken too; it was "unsupported operand @"
    L = _laplacian(16)
    n = L.shape[0]
    A = (L + sp.diags(np.full(n - 1, -0.5), -1)).tocsc()       # non-symmetric
    b = _rhs(n, 13)
    ilu = sla.spilu(A, drop_tol=1e-3)
    exact = sla.spsolve(A, b)
    x_ref, info = sla.gmres(A, b, rtol=1e-10, M=sla.LinearOperator(A.shape, ilu.solve))
    assert info == 0
    plain = skiff.solve(A, b, method="gmres", precond="none", rtol=1e-10)
    for M in (ilu, sla.LinearOperator(A.shape, ilu.solve)):
        sol = skiff.solve(A, b, method="gmres", precond=M, rtol=1e-10)
        assert sol.converged and sol.iterations < plain.iterations
        assert np.linalg.norm(sol.x - exact) <= 1e-8 * np.linalg.norm(exact)
        np.testing.assert_allclose(sol.x, x_ref, rtol=1e-6, atol=1e-9)

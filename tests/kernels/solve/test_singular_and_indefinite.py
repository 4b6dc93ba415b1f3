"""Two systems a user's matrix often is, and CG is not made for: a symmetric indefinite one (a
shifted Laplacian, Helmholtz's) and a singular one (a pure Neumann or graph Laplacian, whose
null space is the constants). ``method='auto'`` goes on with GMRES when CG breaks down on the
first; the second is solved when b is compatible, refused with the reason when it is not.
SciPy's direct solve and NumPy's least squares are the references."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

from skiff.kernels.solve import SolveError, Solver, solve


def _laplacian(m: int, neumann: bool = False) -> sp.csr_matrix:
    """The 2D 5-point Laplacian on an m x m grid (h = 1 / (m + 1)); with ``neumann`` every
    row sums to zero (reflecting sides)."""
    e = np.ones(m)
    T = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1]).tolil()
    if neumann:
        T[0, 0] = T[m - 1, m - 1] = 1.0
    T = T.tocsr() * (m + 1) ** 2
    return sp.kronsum(T, T).tocsr()


def test_auto_goes_on_with_gmres_when_cg_meets_an_indefinite_matrix():
    # one eigenvalue below zero, too close to it for the setup's Lanczos check (which takes
    # MINRES where it sees one: test_auto_indefinite_minres_r30b.py), so CG meets it
    A = (_laplacian(40) - 30.0 * sp.eye(1600)).tocsr()
    assert np.sum(np.linalg.eigvalsh(A.toarray()) < 0) >= 1
    b = np.random.default_rng(0).standard_normal(1600)
    sol = solve(A, b, rtol=1e-10)
    ref = spl.spsolve(A.tocsc(), b)
    assert sol.converged and sol.method == "gmres"
    assert "auto: cg found the matrix indefinite" in sol.info["solver"]
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    # the same Solver keeps GMRES for its next right-hand side (no second breakdown)
    solver = Solver(A)
    assert solver.method == "cg"
    first, second = solver.solve(b), solver.solve(2 * b)
    assert (first.method, second.method) == ("gmres", "gmres") and second.converged
    # asked for CG by name, the user gets the reason and the methods that solve it
    with pytest.raises(SolveError, match=r"(not positive definite|indefinite).*'gmres'"):
        solve(A, b, method="cg")


def test_a_pure_neumann_matrix_needs_a_compatible_b():
    A = _laplacian(20, neumann=True)
    assert abs(A @ np.ones(400)).max() < 1e-9  # the constants are its null space
    rng = np.random.default_rng(1)
    b = rng.standard_normal(400)
    # b with a mean has no solution: said, with the way out (CG used to break down with
    # "the preconditioner is not positive definite", GMRES to run to maxiter, growing)
    for method in ("auto", "cg", "gmres"):
        with pytest.raises(ValueError, match=r"singular.*rows and columns sum to zero.*"
                                             r"mean of b = .*compatibility='project'"):
            solve(A, b, method=method)
    sol = solve(A, b, compatibility="project", rtol=1e-10)
    # the least-squares solution of least norm: the projected b's solution with mean 0
    ref = np.linalg.lstsq(A.toarray(), b - b.mean(), rcond=None)[0]
    assert sol.converged and abs(sol.x.mean()) < 1e-8
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    # a compatible b is solved as it is, by CG
    ok = solve(A, b - b.mean(), rtol=1e-10)
    assert ok.converged and ok.method == "cg"
    assert np.linalg.norm(A @ ok.x - (b - b.mean())) <= 1e-8 * np.linalg.norm(b)


def test_a_nonsingular_matrix_with_zero_row_sums_in_one_direction_is_not_refused():
    """Rows summing to zero make b's mean matter only when the columns do too (a symmetric
    matrix): a grounded Laplacian (one row kept Dirichlet) is solved whatever b's mean."""
    A = _laplacian(12, neumann=True).tolil()
    A[0, :] = 0.0
    A[0, 0] = 1.0  # one node grounded: non-symmetric, nonsingular
    A = A.tocsr()
    b = np.random.default_rng(2).standard_normal(144)
    sol = solve(A, b, rtol=1e-10)
    assert sol.converged
    assert np.linalg.norm(sol.x - spl.spsolve(A.tocsc(), b)) <= 1e-7 * np.linalg.norm(sol.x)


def test_an_empty_row_is_named_before_the_solve():
    """A zero matrix broke GMRES down ("zero column") and a zero row ran it to maxiter with
    |r|/|b| = 1; both are said at setup with the row."""
    import scipy.sparse as sparse

    from skiff.kernels.solve import SolveError, solve

    n = 30
    with pytest.raises(SolveError, match="the matrix is all zeros"):
        solve(np.zeros((n, n)), np.ones(n))
    d = np.ones(n)
    d[[4, 9]] = 0.0
    with pytest.raises(SolveError, match=r"row 4 of the matrix is all zeros \(and 1 more\)"):
        solve(sparse.diags(d).tocsr(), np.ones(n))


def test_scipy_habits_in_the_call():
    import scipy.sparse as sparse

    from skiff.kernels.solve import solve

    n = 40
    A = sparse.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    with pytest.raises(TypeError, match="takes rtol= .* not tol="):
        solve(A, np.ones(n), tol=1e-6)
    col = sparse.csr_matrix(np.ones((n, 1)))   # b as a sparse column
    sol = solve(A, col)
    assert sol.converged and np.allclose(A @ sol.x, np.ones(n), atol=1e-6)


def test_a_negative_definite_matrix_asked_for_cg_is_told_to_negate():
    """The [1, -2, 1] second difference (a common sign convention) is negative definite: CG
    on -A solves it, and the message says so instead of only naming other methods."""
    import scipy.sparse as sp

    n = 50
    A = sp.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], [-1, 0, 1]).tocsr()
    b = np.ones(n)
    with pytest.raises(SolveError, match=r"negative definite; solve -A x = -b with cg"):
        Solver(A, method="cg").solve(b)
    sol = Solver(-A, method="cg").solve(-b)
    assert sol.converged
    np.testing.assert_allclose(A @ sol.x, b, atol=1e-6)

"""Bad input is refused where it enters, with a message that shows the value."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.kernels.solve import METHODS, PRECONDS, SolveError, Solver, grid_problem, poisson, solve


def test_non_square_matrix():
    with pytest.raises(ValueError, match=r"square.*\(3, 4\)"):
        solve(sp.random(3, 4, density=0.5, format="csr"), np.ones(3))


def test_mismatched_rhs():
    A = sp.eye(5, format="csr")
    with pytest.raises(ValueError, match=r"b has 4 entries.*5 unknowns"):
        solve(A, np.ones(4))
    with pytest.raises(ValueError, match=r"b has 10 entries"):
        solve(poisson((4, 4)), np.ones(10))


def test_nan_in_b():
    b = np.ones(6)
    b[3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf.*index \(3,\)"):
        solve(sp.eye(6, format="csr"), b)


def test_indefinite_matrix_to_cg():
    A = sp.diags(np.r_[np.ones(10), -np.ones(10)]) + sp.diags([0.1, 0.1], [-1, 1], shape=(20, 20))
    b = np.ones(20)
    with pytest.raises(SolveError, match="not positive definite"):
        solve(A.tocsr(), b, method="cg", precond="none")
    with pytest.raises(SolveError, match="not positive definite"):
        solve(A.tocsr(), b, method="pipecg", precond="none")
    # the methods for general matrices solve it
    sol = solve(A.tocsr(), b, method="gmres", precond="none", rtol=1e-10)
    assert sol.converged


def test_singular_neumann_without_fix():
    p = grid_problem((16, 16), source=1.0, bc="neumann")
    with pytest.raises(ValueError, match=r"singular.*mean of b = 1.*compatibility='project'"):
        solve(p, method="cg", precond="mg")


@pytest.mark.parametrize("kw,word", [({"method": "sor"}, "method"),
                                     ({"precond": "ssor"}, "preconditioner"),   # ilu runs (r40h10)
                                     ({"cycle": "X"}, "cycle"),
                                     ({"smoother": "sor"}, "smoother")])
def test_unknown_names_list_valid_ones(kw, word):
    with pytest.raises(ValueError) as info:
        Solver(poisson((8, 8)), **kw)
    msg = str(info.value)
    assert f"unknown {word} {next(iter(kw.values()))!r}" in msg
    valid = {"method": METHODS, "preconditioner": PRECONDS}.get(word, ())
    for name in valid:
        assert name in msg


def test_bad_problem_arguments():
    with pytest.raises(ValueError, match="unknown side 'up'"):
        grid_problem((8, 8), bc={"up": "dirichlet"})
    with pytest.raises(ValueError, match="unknown boundary condition 'robin'"):
        grid_problem((8, 8), bc={"x-": "robin"})
    with pytest.raises(ValueError, match=r"mask has shape \(4, 4\)"):
        grid_problem((8, 8), mask=np.ones((4, 4), bool))
    with pytest.raises(ValueError, match="positive"):
        grid_problem((8, 8), k=-np.ones((8, 8)))
    with pytest.raises(ValueError, match="grid shape"):
        grid_problem((8,))


def test_method_problem_mismatch():
    with pytest.raises(ValueError, match="needs a grid problem"):
        Solver(sp.eye(4, format="csr"), method="mg")
    with pytest.raises(ValueError, match="precond 'mg' needs a grid"):
        Solver(sp.eye(4, format="csr"), precond="mg")
    from skiff.kernels.solve import convection_diffusion

    with pytest.raises(ValueError, match="symmetric"):
        Solver(convection_diffusion((8, 8), (1.0, 0.0)), method="cg")


def test_tolerances_checked():
    with pytest.raises(ValueError, match=r"rtol=-1"):
        solve(poisson((8, 8)), rtol=-1)


def test_not_converged_is_reported_not_raised():
    sol = solve(poisson((32, 32), source=1.0), method="cg", precond="none", maxiter=3)
    assert not sol.converged and sol.iterations == 3
    assert "NOT converged" in repr(sol)


def test_a_matrix_written_as_a_list_of_rows_is_solved_like_numpy():
    """numpy.linalg.solve takes [[4, 1], [1, 3]]; skiff.solve refused it (round 22)."""
    A, b = [[4.0, 1.0], [1.0, 3.0]], [1, 2]
    np.testing.assert_allclose(solve(A, b).x, np.linalg.solve(A, b), rtol=1e-8)
    with pytest.raises(ValueError, match="equal-length rows of numbers"):
        solve([[1, 2], [3]], b)
    with pytest.raises(ValueError, match="a list of rows \\(2-D\\)"):
        solve([1, 2, 3], b)

"""A non-symmetric system: CG refuses it at once, naming the entry (it used to run to maxiter and
diverge), and ``method='auto'`` (the default) solves it with GMRES; SciPy's direct solve is the
reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spl

from skiff.kernels.solve import SolveError, Solver, grid_problem, poisson, solve
from skiff.kernels.solve.operators import asymmetry, matrix_operator


def _convection_diffusion(n: int, peclet: float) -> sp.csr_matrix:
    """2D upwind convection-diffusion on an n x n grid (non-symmetric, positive diagonal)."""
    e = np.ones(n)
    second = sp.diags([-e[:-1], 2 * e, -e[:-1]], [-1, 0, 1])
    upwind = sp.diags([-e[:-1], e], [-1, 0])
    eye = sp.eye(n)
    h = 1.0 / (n + 1)
    return ((sp.kron(eye, second) + sp.kron(second, eye)) / h**2
            + peclet * (sp.kron(eye, upwind) + 0.5 * sp.kron(upwind, eye)) / h).tocsr()


def test_cg_refuses_a_non_symmetric_matrix_and_names_the_entry():
    A = sp.diags([-1.3, 2.0, -0.7], [-1, 0, 1], shape=(400, 400)).tocsr()
    for method in ("cg", "pipecg"):
        with pytest.raises(SolveError, match=r"needs a symmetric matrix.*A\[\d+, \d+\] - "
                                             r"A\[\d+, \d+\] = [-]?0\.6.*'gmres'"):
            solve(A, np.ones(400), method=method)
    # a function or LinearOperator has no entries: two random products show it
    with pytest.raises(SolveError, match=r"u \. A v = .* but v \. A u = "):
        solve(lambda x: A @ x, np.ones(400), method="cg", precond="none")
    with pytest.raises(SolveError, match="needs a symmetric matrix"):
        solve(spl.LinearOperator(A.shape, matvec=lambda v: A @ v, dtype=float),   # r47 h12
              np.ones(400), method="cg", precond="none")


@pytest.mark.parametrize("n, peclet", [(32, 10.0), (48, 100.0)])
def test_auto_solves_a_non_symmetric_system_with_gmres(n, peclet):
    A = _convection_diffusion(n, peclet)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    sol = solve(A, b, rtol=1e-10)
    assert sol.method == "gmres" and sol.converged
    ref = spl.spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_auto_keeps_cg_for_symmetric_positive_systems():
    A = _convection_diffusion(24, 0.0)  # no convection: the symmetric Laplacian
    assert solve(A, np.ones(A.shape[0])).method == "cg"
    assert solve(lambda x: A @ x, np.ones(A.shape[0]), precond="none").method == "cg"
    assert Solver(poisson((16, 16))).method == "cg"
    # symmetric but a negative diagonal entry: not CG's (it needs positive definite); MINRES
    S = sp.diags([1.0, -2.0, 3.0]).tocsr()
    sol = solve(S, np.ones(3), precond="none")
    assert sol.method == "minres" and np.allclose(S @ sol.x, 1.0)
    # a convecting grid problem: GMRES, not CG's refusal
    conv = grid_problem((16, 16), velocity=(20.0, 5.0))
    assert Solver(conv).method == "gmres"


def test_round_off_asymmetry_is_symmetric():
    A = _convection_diffusion(16, 0.0)
    noise = sp.random(*A.shape, density=0.01, random_state=3, format="csr") * 1e-12
    op = matrix_operator(A + noise, None, np)
    assert asymmetry(op) is None
    assert asymmetry(matrix_operator(A + noise * 1e9, None, np)) is not None  # 1e-6 of |A|


def test_the_symmetry_probe_runs_once_per_setup():
    """'auto' then CG's own check share one probe: two products at setup, not four."""
    A = _convection_diffusion(12, 0.0)
    calls = []

    def matvec(x):
        calls.append(1)
        return A @ x

    solver = Solver(matvec, precond="none", n=A.shape[0])
    assert solver.method == "cg" and len(calls) == 2

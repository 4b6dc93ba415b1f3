"""Built-in grid problems and the Solution a user gets back (probe of 2026-12-04): each
number is checked against SciPy on the same assembled matrix."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver, convection_diffusion, grid_problem, poisson
from skiff.kernels.solve.entry import build_problem, solver_from_config
from skiff.kernels.solve.problems import FieldError
from skiff.kernels.solve.solution import Solution
from skiff.kinds.solve import to_config


@pytest.mark.parametrize("name", ["diffusion", "jump"])
@pytest.mark.parametrize("grid", [(32, 32), (16, 16, 16)])
def test_builtin_neumann_is_solvable_and_matches_scipy(name, grid):
    # `solve diffusion --bc neumann` failed in its job: a source of 1 has no solution
    cfg = to_config({"problem": name, "grid": "x".join(map(str, grid)), "bc": "neumann"})
    p = build_problem(cfg)
    sol = solver_from_config(p, cfg).solve(None, rtol=1e-10)
    assert sol.converged
    A, b = p.matrix(), p.rhs.ravel()
    assert abs(b.mean()) < 1e-12 * np.abs(b).max()
    n = A.shape[0]
    # the mean-0 one: A bordered by the constants ([[A, 1], [1^T, 0]], A symmetric with zero
    # row sums; round 39: A + 11^T/n, a dense n x n as sparse, took 10-16 s CPU on 16^3)
    one = sp.csr_matrix(np.ones((n, 1)))
    ref = spla.spsolve(sp.bmat([[A, one], [one.T, None]]).tocsc(), np.append(b, 0.0))[:n]
    assert abs(A - A.T).max() <= 1e-12 * abs(A).max()
    x = sol.x - sol.x.mean()
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_mg_cycles_refuse_convection():
    # the cycles hold the diffusion only: 'converged' to the problem without convection,
    # |b - Ax|/|b| = 2.7, and the status blamed round-off
    p = convection_diffusion((32, 32), (20.0, 5.0))
    for method in ("mg", "fmg"):
        with pytest.raises(ValueError, match="diffusion only"):
            Solver(p, method=method)
    # what does solve it, against SciPy
    sol = Solver(p, method="gmres", precond="mg").solve(rtol=1e-10)
    ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel())
    assert np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_convection_with_neumann_on_every_side_is_refused():
    # singular (the constants) and b = 1 outside the range: BiCGStab broke down after 1600
    # iterations, stationary MG went to 1e121
    with pytest.raises(ValueError, match="Neumann on every side"):
        convection_diffusion((32, 32), (20.0, 5.0), bc="neumann")
    A = convection_diffusion((8, 8), (20.0, 5.0),
                             bc={"x-": "dirichlet", "x+": "neumann", "y-": "neumann",
                                 "y+": "neumann"}).matrix()
    assert abs(A @ np.ones(64)).max() > 0    # one Dirichlet side: no longer singular


def test_values_that_are_not_finite_or_real_are_named():
    with pytest.raises(FieldError, match="side x- must be finite"):
        with np.errstate(invalid="ignore"):
            grid_problem((16, 16), source=1.0,
                         bc={"x-": ("dirichlet", lambda x, y: np.log(y - .5))})
    with pytest.raises(FieldError, match="signed distance must be finite"):
        grid_problem((16, 16), source=1.0, sdf=np.full((16, 16), np.nan))
    with pytest.raises(ValueError, match="must be real"):
        grid_problem((16, 16), source=lambda x, y: 1j * x)


def test_body_dirichlet_value_not_finite_is_named():
    c = (np.arange(32) + 0.5) / 32
    X, Y = np.meshgrid(c, c, indexing="ij")
    sdf = np.hypot(X - 0.5, Y - 0.5) - 0.2
    with pytest.raises(FieldError, match="body's Dirichlet value must be finite"), \
            np.errstate(invalid="ignore"):
        grid_problem((32, 32), source=1.0, sdf=sdf,
                     body_bc=("dirichlet", lambda x, y: np.log(np.abs(x - 0.5) - 1)))


def test_solution_plot_and_load_round_trip(tmp_path):
    p = poisson((32, 24), extent=(2.0, 1.0))
    sol = Solver(p, method="cg", precond="mg").solve(rtol=1e-10)
    ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel())
    assert np.linalg.norm(sol.x - ref) <= 1e-8 * np.linalg.norm(ref)
    field, conv = sol.plot()               # documented; was an AttributeError
    assert len(field.axes) == 2 and len(conv.axes) == 1
    png = tmp_path / "f.png"
    sol.plot("field", path=png)
    assert png.read_bytes()[:4] == b"\x89PNG"
    back = Solution.load(sol.save(tmp_path / "s.npz"))
    assert np.array_equal(back.field, sol.field) and back.extent == (2.0, 1.0)
    assert back.summary() == sol.summary() and back.bnorm == sol.bnorm
    assert "units" in sol.summary() and "error" in sol.summary()["units"]
    with pytest.raises(ValueError, match="npz"):
        Solution.load(tmp_path / "s.vtk")

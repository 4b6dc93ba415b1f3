"""Every method and preconditioner against scipy.sparse.linalg.spsolve (and pyamg where it is a
peer), on grid problems, user matrices and callables."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import Solver, convection_diffusion, grid_problem, poisson, solve
from skiff.kernels.solve.amg import SmoothedAggregation, aggregate, strength
from skiff.kernels.solve.multigrid import GeometricMG


def _spsolve(A, b):
    return spla.spsolve(sp.csc_matrix(A), b)


@pytest.fixture(scope="module")
def grid2d():
    p = poisson((32, 48), extent=(1.0, 1.5), bc={"x-": "dirichlet", "x+": ("neumann", 0.5),
                                                 "y-": ("dirichlet", 1.0), "y+": "dirichlet"})
    ref = _spsolve(p.matrix(), p.rhs.ravel()).reshape(p.shape)
    return p, ref


@pytest.mark.parametrize("method,precond", [
    ("cg", "none"), ("cg", "jacobi"), ("cg", "chebyshev"), ("cg", "mg"), ("cg", "amg"),
    ("pipecg", "jacobi"), ("pipecg", "none"), ("pipecg", "mg"), ("bicgstab", "mg"),
    ("gmres", "jacobi"), ("gmres", "mg"), ("mg", "none"), ("fmg", "none"), ("direct", "none"),
])
def test_grid_methods_agree_with_spsolve(grid2d, method, precond):
    p, ref = grid2d
    sol = solve(p, method=method, precond=precond, rtol=1e-10, maxiter=5000)
    assert sol.converged and sol.relative_residual <= 1e-10
    np.testing.assert_allclose(sol.field, ref, rtol=1e-7, atol=1e-8 * np.abs(ref).max())
    # the reported residual is the true one
    true = np.linalg.norm(p.rhs.ravel() - p.matrix() @ sol.field.ravel())
    assert true <= 3e-10 * np.linalg.norm(p.rhs) + 1e-12


@pytest.mark.parametrize("cycle,smoother", [("V", "chebyshev"), ("W", "rbgs"), ("F", "rbgs")])
def test_cycles_and_smoothers(cycle, smoother):
    p = poisson((32, 16, 16))    # three levels: W and F differ from V
    ref = _spsolve(p.matrix(), p.rhs.ravel())
    sol = solve(p, method="mg", cycle=cycle, smoother=smoother, rtol=1e-9)
    assert sol.converged and sol.iterations <= 25
    np.testing.assert_allclose(sol.field.ravel(), ref, rtol=1e-6, atol=1e-9)


def test_spd_user_matrix_amg_vs_spsolve_and_pyamg():
    pyamg = pytest.importorskip("pyamg")
    A = pyamg.gallery.poisson((40, 40), format="csr")
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    ref = _spsolve(A, b)
    for method in ("cg", "pipecg", "gmres", "bicgstab"):
        sol = skiff.solve(A, b, method=method, precond="amg", rtol=1e-10)
        assert sol.converged, method
        np.testing.assert_allclose(sol.x, ref, rtol=1e-7, atol=1e-9)
    ours = solve(A, b, method="cg", precond="amg", rtol=1e-8).iterations
    ml = pyamg.smoothed_aggregation_solver(A)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res)
    assert ours <= 3 * len(res)          # in the same league as pyamg's SA


def test_nonsymmetric_user_matrix_vs_spsolve():
    rng = np.random.default_rng(1)
    n = 300
    A = sp.random(n, n, density=0.02, random_state=2, format="csr") + sp.eye(n) * 4.0
    A = A.tocsr()
    b = rng.standard_normal(n)
    ref = _spsolve(A, b)
    for method, precond in (("bicgstab", "jacobi"), ("gmres", "none"), ("gmres", "amg"),
                            ("bicgstab", "amg")):
        sol = solve(A, b, method=method, precond=precond, rtol=1e-11)
        assert sol.converged, (method, precond)
        np.testing.assert_allclose(sol.x, ref, rtol=1e-8, atol=1e-10)


def test_convection_diffusion_vs_spsolve():
    p = convection_diffusion((32, 32), (40.0, -10.0), bc={"x-": ("dirichlet", 1.0)})
    ref = _spsolve(p.matrix(), p.rhs.ravel()).reshape(p.shape)
    for method, precond in (("bicgstab", "mg"), ("gmres", "amg")):
        sol = solve(p, method=method, precond=precond, rtol=1e-10)
        assert sol.converged
        np.testing.assert_allclose(sol.field, ref, rtol=1e-7, atol=1e-9)


def test_callable_operator():
    A = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(100, 100)).tocsr()
    b = np.arange(100.0)
    sol = solve(lambda x: A @ x, b, method="cg", precond="none", n=100, rtol=1e-12)
    np.testing.assert_allclose(sol.x, _spsolve(A, b), rtol=1e-9)


def test_solver_reused_for_many_rhs_on_masked_domain():
    """A pressure-like equation around a disc: Neumann walls at the body, setup built once."""
    n = 64
    x = (np.arange(n) + 0.5) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    sdf = np.hypot(X - 0.4, Y - 0.5) - 0.15
    p = grid_problem((n, n), sdf=sdf, source=0.0,
                     bc={"x-": ("dirichlet", 1.0), "x+": ("dirichlet", 0.0),
                         "y-": "neumann", "y+": "neumann"})
    A = p.matrix()
    solver = Solver(p, method="cg", precond="mg")
    setup = solver.setup_time
    rng = np.random.default_rng(3)
    for _ in range(3):
        b = rng.standard_normal(p.shape) * (sdf >= 0)
        sol = solver.solve(b, rtol=1e-9)
        assert sol.converged and sol.iterations < 30
        np.testing.assert_allclose(sol.field.ravel(), _spsolve(A, b.ravel()), rtol=1e-6,
                                   atol=1e-8)
        assert np.all(sol.field[sdf < 0] == 0.0)
    assert solver.setup_time == setup


def test_pure_neumann_with_compatibility_projection():
    p = grid_problem((32, 32), source=lambda x, y: np.cos(np.pi * x) * np.cos(np.pi * y) + 0.3,
                     bc="neumann")
    assert p.singular
    sol = solve(p, method="cg", precond="mg", compatibility="project", rtol=1e-9)
    assert sol.converged
    assert abs(sol.field.mean()) < 1e-10
    b = p.rhs.ravel() - p.rhs.mean()
    assert np.linalg.norm(p.matrix() @ sol.field.ravel() - b) <= 1e-8 * np.linalg.norm(b)


def test_fmg_reaches_discretisation_error():
    p = poisson((128, 128))
    mg = GeometricMG(p.stencil, p.signs)
    u = mg.fmg(p.source, p.bterm)
    exact = p.exact.reshape(p.shape3)
    converged = solve(p, method="mg", rtol=1e-12).field
    disc = np.abs(converged - p.exact).max()
    assert np.abs(u - exact).max() <= 1.5 * disc


def test_amg_building_blocks():
    A = poisson((20, 20)).matrix()
    S = strength(A, 0.0)
    agg, count = aggregate(S)
    assert agg.min() == 0 and agg.max() == count - 1 and 20 < count < 200
    amg = SmoothedAggregation(A, max_coarse=50)
    assert amg.nlevels >= 2
    assert "levels" in amg.describe()


def test_skiff_solve_lazy_name():
    assert skiff.solve is solve


def test_grid_that_stops_halving_early_uses_a_sparse_coarse_solve():
    p = poisson((200, 200))          # 200 > 100 > 50 > 25: a 25^2 = 625-cell coarsest grid
    from skiff.kernels.solve import multigrid

    old = multigrid.DENSE_COARSE
    multigrid.DENSE_COARSE = 100     # force the sparse-LU branch
    try:
        sol = solve(p, method="cg", precond="mg", rtol=1e-10)
    finally:
        multigrid.DENSE_COARSE = old
    assert sol.converged and sol.iterations < 15
    np.testing.assert_allclose(sol.field.ravel(), _spsolve(p.matrix(), p.rhs.ravel()),
                               rtol=1e-7, atol=1e-10)

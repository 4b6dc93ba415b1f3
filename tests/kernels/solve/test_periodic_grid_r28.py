"""Periodic sides on the grid problems (round 28): ``bc={'x': 'periodic', ...}`` or
``bc='periodic'``. Oracles: the same finite-volume problem assembled here, cell by cell, as a
scipy.sparse matrix with the wrap-around couplings, solved by ``spsolve`` (or ``lsqr`` for the
singular all-periodic Poisson); pyamg's iteration counts on that matrix for reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve.problems import grid_problem, poisson


def _fv_matrix(shape, kcell, h, kinds, velocity=None):
    """-div(k grad u) (+ upwind v.grad u) cell by cell: harmonic-mean faces, a Dirichlet ghost
    at half a cell (2 k / h^2), Neumann zero flux, periodic wrap to the opposite cell."""
    shape = tuple(shape)
    n = int(np.prod(shape))
    idx = np.arange(n).reshape(shape)
    A = sp.lil_matrix((n, n))
    for cell in np.ndindex(*shape):
        i = idx[cell]
        for a in range(len(shape)):
            for step in (-1, 1):
                nb = list(cell)
                nb[a] += step
                kc = kcell[cell]
                if 0 <= nb[a] < shape[a] or kinds[a] == "periodic":
                    nb[a] %= shape[a]
                    kn = kcell[tuple(nb)]
                    w = 2 * kc * kn / (kc + kn) / h[a] ** 2
                    A[i, i] += w
                    A[i, idx[tuple(nb)]] -= w
                elif kinds[a] == "dirichlet":
                    A[i, i] += 2 * kc / h[a] ** 2
            if velocity is not None and velocity[a] != 0:
                v = velocity[a] / h[a]
                up = list(cell)
                up[a] += -1 if v > 0 else 1
                sgn = 1.0 if v > 0 else -1.0
                A[i, i] += sgn * v
                if 0 <= up[a] < shape[a] or kinds[a] == "periodic":
                    up[a] %= shape[a]
                    A[i, idx[tuple(up)]] -= sgn * v
                elif kinds[a] == "dirichlet":   # ghost = -u (zero boundary value)
                    A[i, i] += sgn * v
    return A.tocsr()


def _centres(shape, ext=1.0):
    h = [ext / m for m in shape]
    return np.meshgrid(*[(np.arange(m) + 0.5) * hh for m, hh in zip(shape, h)],
                       indexing="ij"), h


@pytest.mark.parametrize("shape,bc,kinds", [
    ((12, 10), {"x": "periodic", "y": "dirichlet"}, ("periodic", "dirichlet")),
    ((8, 6), {"x": "dirichlet", "y": "periodic"}, ("dirichlet", "periodic")),
    ((6, 4, 5), "periodic", ("periodic",) * 3),
    ((6, 4, 5), {"x": "periodic", "y-": "neumann", "y+": "neumann", "z": "periodic"},
     ("periodic", "neumann", "periodic")),
    ((2, 6), {"x": "periodic"}, ("periodic", "dirichlet")),
])
def test_matrix_matches_cell_by_cell_assembly(shape, bc, kinds):
    rng = np.random.default_rng(1)
    k = rng.uniform(0.5, 3.0, shape)
    _, h = _centres(shape)
    ref = _fv_matrix(shape, k, h, kinds)
    got = grid_problem(shape, k=k, bc=bc).matrix()
    assert abs(got - ref).max() <= 1e-9 * abs(ref).max()
    uniform = grid_problem(shape, k=2.0, bc=bc).matrix()     # ConstStencil path
    ref_u = _fv_matrix(shape, np.full(shape, 2.0), h, kinds)
    assert abs(uniform - ref_u).max() <= 1e-9 * abs(ref_u).max()


def test_matvec_of_the_grid_operator_wraps():
    """The matrix-free operator (fused kernels + wrap terms) against the assembled oracle."""
    from skiff.kernels.solve.operators import GridOperator

    rng = np.random.default_rng(2)
    for k in (1.0, rng.uniform(0.5, 2.0, (10, 8))):
        p = grid_problem((10, 8), k=k, bc={"x": "periodic"})
        _, h = _centres((10, 8))
        A = _fv_matrix((10, 8), np.broadcast_to(k, (10, 8)), h, ("periodic", "dirichlet"))
        op = GridOperator(p, np)
        u = rng.standard_normal(p.shape3)
        out = np.empty_like(u)
        dot = op.matvec_dot(u, out)
        np.testing.assert_allclose(out.ravel(), A @ u.ravel(), rtol=1e-12, atol=1e-9)
        assert dot == pytest.approx(float(u.ravel() @ (A @ u.ravel())), rel=1e-10)


@pytest.mark.parametrize("method", ["cg", "mg", "fmg", "bicgstab", "direct"])
def test_channel_periodic_in_x_solves_as_spsolve(method):
    (X, Y), h = _centres((64, 48))
    f = np.sin(2 * np.pi * X) * np.sin(np.pi * Y) + 1.0
    k = 1.0 + 0.5 * np.cos(2 * np.pi * X)    # periodic in x, variable: VarStencil path
    A = _fv_matrix((64, 48), k, h, ("periodic", "dirichlet"))
    ref = spla.spsolve(A.tocsc(), f.ravel())
    p = grid_problem((64, 48), k=k, source=f, bc={"x": "periodic", "y": "dirichlet"})
    s = skiff.solve(p, method=method, rtol=1e-10)
    assert s.converged
    err = np.abs(np.asarray(s.x).ravel() - ref).max() / np.abs(ref).max()
    assert err < 1e-8


def test_all_periodic_poisson_singular_as_lsqr_and_pyamg():
    pyamg = pytest.importorskip("pyamg")
    shape = (64, 64)
    (X, Y), h = _centres(shape)
    g = np.sin(2 * np.pi * X) * np.cos(4 * np.pi * Y) + 0.3   # a mean: incompatible
    A = _fv_matrix(shape, np.ones(shape), h, ("periodic", "periodic"))
    b = (g - g.mean()).ravel()
    ref = spla.lsqr(A, b, atol=1e-14, btol=1e-14, iter_lim=20000)[0]
    ref -= ref.mean()
    p = poisson(shape, source=g, bc="periodic")
    assert p.singular
    with pytest.raises(ValueError, match="periodic on every side.*compatibility='project'"):
        skiff.solve(p)
    res = []   # pyamg's CG stops on this singular matrix ("indefinite preconditioner"): its
    ml = pyamg.smoothed_aggregation_solver(A, symmetry="symmetric")   # stationary cycles
    ml.solve(b, tol=1e-10, accel=None, residuals=res, maxiter=200)
    for method, precond in (("cg", "mg"), ("mg", "auto"), ("fmg", "auto"), ("cg", "amg")):
        s = skiff.solve(p, method=method, precond=precond, compatibility="project", rtol=1e-10)
        u = np.asarray(s.x).ravel()
        u = u - u.mean()
        assert np.abs(u - ref).max() <= 1e-7 * np.abs(ref).max(), (method, precond)
        if method == "mg":   # geometric MG keeps periodicity: as few cycles as pyamg's
            assert s.iterations <= len(res) - 1, (s.iterations, len(res) - 1)


def test_channel_mg_iterations_as_pyamg():
    """x periodic, y Dirichlet, 128x128: CG + geometric MG takes no more iterations than CG +
    pyamg's smoothed aggregation on the oracle matrix (9 vs 12 when written)."""
    pyamg = pytest.importorskip("pyamg")
    shape = (128, 128)
    (X, Y), h = _centres(shape)
    f = np.sin(2 * np.pi * X) * np.sin(3 * np.pi * Y) + 1.0
    A = _fv_matrix(shape, np.ones(shape), h, ("periodic", "dirichlet"))
    res = []
    pyamg.smoothed_aggregation_solver(A, symmetry="symmetric").solve(
        f.ravel(), tol=1e-10, accel="cg", residuals=res)
    s = skiff.solve(poisson(shape, source=f, bc={"x": "periodic"}), method="cg",
                    precond="mg", rtol=1e-10)
    assert s.converged and s.iterations <= len(res) - 1, (s.iterations, len(res) - 1)
    ref = spla.spsolve(A.tocsc(), f.ravel())
    assert np.abs(np.asarray(s.x).ravel() - ref).max() <= 1e-8 * np.abs(ref).max()


def test_coarse_levels_stay_periodic():
    """Every multigrid level's operator is the periodic matrix of its own grid."""
    from skiff.kernels.solve.multigrid import GeometricMG

    p = poisson((32, 16), source=1.0, bc={"x": "periodic", "y": "neumann"})
    mg = GeometricMG(p.stencil, p.signs, coarse_size=16, singular=True)
    assert mg.nlevels >= 3
    for lv in mg.levels:
        n0, n1 = lv.shape[1:]
        ref = _fv_matrix((n0, n1), np.ones((n0, n1)), (1 / n0, 1 / n1), ("periodic", "neumann"))
        assert abs(lv.stencil.to_csr() - ref).max() <= 1e-9 * abs(ref).max()


def test_convection_periodic_in_x_matches_upwind_oracle():
    shape = (40, 24)
    (X, Y), h = _centres(shape)
    f = np.exp(-40 * ((X - 0.5) ** 2 + (Y - 0.5) ** 2))
    for vel in ((20.0, 3.0), (-20.0, -3.0)):
        A = _fv_matrix(shape, np.ones(shape), h, ("periodic", "dirichlet"), velocity=vel)
        p = grid_problem(shape, source=f, bc={"x": "periodic"}, velocity=vel)
        assert abs(p.matrix() - A).max() <= 1e-9 * abs(A).max()
        ref = spla.spsolve(A.tocsc(), f.ravel())
        s = skiff.solve(p, method="gmres", rtol=1e-11)
        assert np.abs(np.asarray(s.x).ravel() - ref).max() <= 1e-7 * np.abs(ref).max()


@pytest.mark.parametrize("bc,match", [
    ({"x-": "periodic"}, "periodic on one side only"),
    ({"x": ("periodic", 1.0)}, "takes no value"),
    ({"z": "periodic"}, "does not exist on a 2D grid"),
    ("periodc", "choose from dirichlet, neumann, periodic"),
])
def test_bad_periodic_specs_say_what_to_write(bc, match):
    with pytest.raises(ValueError, match=match):
        poisson((8, 8), source=1.0, bc=bc)


def test_convection_on_a_torus_singular_as_lsqr():
    """Every side periodic: the upwind operator is circulant, constants its null space from
    both sides (compatibility='project'); Neumann mixed in keeps the refusal."""
    shape = (48, 32)
    (X, Y), h = _centres(shape)
    f = np.exp(-40 * ((X - 0.5) ** 2 + (Y - 0.5) ** 2))
    vel = (30.0, -8.0)
    A = _fv_matrix(shape, np.ones(shape), h, ("periodic", "periodic"), velocity=vel)
    b = (f - f.mean()).ravel()
    ref = spla.lsqr(A, b, atol=1e-14, btol=1e-14, iter_lim=50000)[0]
    ref -= ref.mean()
    p = grid_problem(shape, source=f, bc="periodic", velocity=vel)
    assert p.singular and abs(p.matrix() - A).max() <= 1e-9 * abs(A).max()
    with pytest.raises(ValueError, match="periodic on every side.*compatibility='project'"):
        skiff.solve(p)
    for method, precond in (("gmres", "amg"), ("bicgstab", "mg")):
        s = skiff.solve(p, method=method, precond=precond, compatibility="project", rtol=1e-11)
        u = np.asarray(s.x).ravel()
        assert np.abs(u - u.mean() - ref).max() <= 1e-7 * np.abs(ref).max(), method
    with pytest.raises(ValueError, match="Neumann and periodic on every side"):
        grid_problem((8, 8), source=1.0, bc={"x": "periodic", "y-": "neumann",
                                             "y+": "neumann"}, velocity=(1.0, 0.0))


def test_manufactured_solution_second_order_across_the_seam():
    """u = sin(2 pi x + 1) sin(pi y) (x periodic, u = 0 at y = 0, 1): the error against the
    analytic u falls 4x per halving of h (second order, the seam included)."""
    def exact(x, y):
        return np.sin(2 * np.pi * x + 1.0) * np.sin(np.pi * y)

    def source(x, y):
        return 5 * np.pi ** 2 * exact(x, y)

    errs = []
    for n in (16, 32, 64):
        p = grid_problem((n, n), source=source, bc={"x": "periodic"}, exact=exact)
        s = skiff.solve(p, method="cg", precond="mg", rtol=1e-12)
        (X, Y), _ = _centres((n, n))
        errs.append(np.abs(np.asarray(s.x).reshape(n, n) - exact(X, Y)).max())
    rates = [errs[i] / errs[i + 1] for i in range(2)]
    assert all(3.5 < r < 4.5 for r in rates), (errs, rates)

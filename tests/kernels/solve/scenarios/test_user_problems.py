"""Problems a user brings: a 3D 128^3 Poisson (memory and iterations sane), strong grid
anisotropy, and matrices from pyamg.gallery (references: spsolve, an independently assembled
Kronecker-sum Laplacian, pyamg)."""

import tracemalloc

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import Solver, poisson


def _kron_dirichlet_laplacian(n, h):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    t[0, 0] = t[n - 1, n - 1] = 3.0          # cell-centred Dirichlet: ghost at half a cell
    t = t.tocsr() / h**2
    eye = sp.eye(n, format="csr")
    return (sp.kron(sp.kron(t, eye), eye) + sp.kron(sp.kron(eye, t), eye)
            + sp.kron(sp.kron(eye, eye), t)).tocsr()


def _apply_dirichlet_laplacian(x, h):
    """``_kron_dirichlet_laplacian(n, h) @ x.ravel()`` by numpy slices (round 43: the 128^3
    Kronecker assembly took 1.9 of this file's CPU s; the two are compared at 12^3)."""
    y = 6.0 * x
    for a in range(3):
        lo, hi, first, last = ([slice(None)] * 3 for _ in range(4))
        lo[a], hi[a], first[a], last[a] = slice(1, None), slice(None, -1), 0, -1
        y[tuple(lo)] -= x[tuple(hi)]
        y[tuple(hi)] -= x[tuple(lo)]
        y[tuple(first)] += x[tuple(first)]   # the ghost at half a cell: 3 on the diagonal
        y[tuple(last)] += x[tuple(last)]
    return y / h**2


@pytest.mark.slow
def test_poisson_3d_128_cubed():
    n = 128
    p = poisson((n, n, n))
    tracemalloc.start()
    sol = skiff.solve(p, method="cg", precond="mg", rtol=1e-8)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sol.converged and sol.iterations <= 12
    assert peak < 40 * 8 * n**3, f"peak {peak / 1e6:.0f} MB"   # a few dozen grid vectors
    z = np.random.default_rng(1).standard_normal((12, 12, 12))
    np.testing.assert_allclose(_apply_dirichlet_laplacian(z, 1 / 12).ravel(),
                               _kron_dirichlet_laplacian(12, 1 / 12) @ z.ravel(), rtol=1e-13,
                               atol=1e-10)
    Ax = _apply_dirichlet_laplacian(np.asarray(sol.x).reshape(n, n, n), 1.0 / n).ravel()
    r = np.linalg.norm(p.rhs.ravel() - Ax) / np.linalg.norm(p.rhs.ravel())
    assert r <= 1.5e-8
    assert sol.error is not None and sol.error < 1e-3     # second order: h^2 ~ 6e-5


@pytest.mark.parametrize("aspect", [0.1, 0.01])
def test_anisotropic_cells_converge_with_semicoarsening(aspect):
    p = poisson((64, 64), extent=(1.0, aspect))        # couplings differ by 1/aspect^2
    ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel())
    for method, limit in (("mg", 30), ("cg", 12), ("pipecg", 12)):
        sol = skiff.solve(p, method=method, rtol=1e-10, maxiter=200)
        assert sol.converged and sol.iterations <= limit, (method, sol.iterations)
        np.testing.assert_allclose(sol.x, ref, atol=1e-8 * np.abs(ref).max())
    amg = skiff.solve(p, method="cg", precond="amg", rtol=1e-10, maxiter=2000)
    assert amg.converged
    np.testing.assert_allclose(amg.x, ref, atol=1e-8 * np.abs(ref).max())


@pytest.fixture(scope="module")
def gallery_poisson():
    """pyamg's 3-D Poisson, b, spsolve's x and pyamg's own iterations, once for the four
    methods (round 42: each test made them again, 4 x the 3-D LU and pyamg's setup)."""
    A = pyamg.gallery.poisson((24, 24, 24), format="csr")
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    res = []
    pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-9, accel="cg", residuals=res)
    return A, b, spla.spsolve(A.tocsc(), b), len(res)


@pytest.mark.parametrize("method", ["cg", "pipecg", "gmres", "bicgstab"])
def test_pyamg_gallery_poisson(method, gallery_poisson):
    A, b, ref, pyamg_its = gallery_poisson
    sol = skiff.solve(A, b, method=method, rtol=1e-9)
    assert sol.converged and sol.precond == "amg" and sol.iterations <= 30
    np.testing.assert_allclose(sol.x, ref, atol=1e-7 * np.abs(ref).max())
    # same ballpark as pyamg's own smoothed aggregation
    assert sol.iterations <= 2 * pyamg_its + 5


def test_pyamg_gallery_elasticity_converges_slower_without_rigid_modes():
    A, modes = pyamg.gallery.linear_elasticity((40, 40), format="bsr")
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    solver = Solver(A, method="cg", precond="amg")
    sol = solver.solve(b, rtol=1e-9, maxiter=1000)
    assert sol.converged
    np.testing.assert_allclose(sol.x, ref, atol=1e-6 * np.abs(ref).max())
    plain = skiff.solve(A, b, method="cg", precond="none", rtol=1e-9, maxiter=5000)
    assert plain.converged and sol.iterations < plain.iterations
    # with the rigid-body modes as near-null space, as fast as pyamg given the same modes
    rb = skiff.solve(A, b, method="cg", precond="amg", near_nullspace=modes, rtol=1e-9)
    # the modes matter with symmetric strength (the constant alone: ~49 iterations); the
    # default evolution strength (round 26) already finds this grid's couplings without them
    from skiff.kernels.solve import SmoothedAggregation

    sym = skiff.solve(A, b, method="cg", rtol=1e-9, maxiter=1000,
                      M=SmoothedAggregation(A.tocsr(), strength="symmetric").aspreconditioner())
    assert sym.converged and rb.converged and rb.iterations < sym.iterations / 3
    np.testing.assert_allclose(rb.x, ref, atol=1e-6 * np.abs(ref).max())
    res = []
    pyamg.smoothed_aggregation_solver(A, B=modes).solve(b, tol=1e-9, accel="cg", residuals=res)
    assert rb.iterations <= 2 * len(res) + 5
    with pytest.raises(ValueError, match="near_nullspace"):
        Solver(A, precond="amg", near_nullspace=modes[:-1])

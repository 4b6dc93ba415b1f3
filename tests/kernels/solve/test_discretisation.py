"""Manufactured solutions: the discretisation error falls as O(h^2) in 2D and 3D."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.solve import grid_problem, poisson, solve


def _order(errors, sizes):
    return np.log(errors[0] / errors[1]) / np.log(sizes[1] / sizes[0])


def _err(problem, exact):
    sol = solve(problem, method="cg", precond="mg", rtol=1e-12)
    assert sol.converged
    return float(np.abs(sol.field - exact(*problem.coords())).max())


def test_poisson_2d_second_order():
    errs = []
    for n in (32, 64):
        p = poisson((n, n))
        errs.append(_err(p, lambda x, y: np.sin(np.pi * x) * np.sin(np.pi * y)))
    assert _order(errs, (32, 64)) == pytest.approx(2.0, abs=0.1)


def test_variable_coefficient_2d_inhomogeneous_mixed_bc():
    """-div(k grad u) = f with k = 1 + x^2 y, u = exp(x) cos(y), Dirichlet and Neumann sides."""
    def u(x, y):
        return np.exp(x) * np.cos(y)

    def k(x, y):
        return 1.0 + x * x * y

    def f(x, y):
        # -(k u_x)_x - (k u_y)_y
        ux, uy = np.exp(x) * np.cos(y), -np.exp(x) * np.sin(y)
        uxx, uyy = ux, -np.exp(x) * np.cos(y)
        kx, ky = 2 * x * y, x * x
        return -(kx * ux + k(x, y) * uxx) - (ky * uy + k(x, y) * uyy)

    bc = {"x-": ("dirichlet", u), "x+": ("dirichlet", u),
          "y-": ("neumann", lambda x, y: np.exp(x) * np.sin(y)),     # du/dn = -u_y at y=0
          "y+": ("neumann", lambda x, y: -np.exp(x) * np.sin(y))}    # du/dn = u_y at y=1
    errs = [_err(grid_problem((n, n), k=k, source=f, bc=bc, exact=u), u) for n in (32, 64)]
    assert _order(errs, (32, 64)) == pytest.approx(2.0, abs=0.1)


def test_diffusion_3d_second_order():
    def u(x, y, z):
        return np.sin(np.pi * x) * np.sin(np.pi * y) * np.sin(np.pi * z) + x * y * z

    def k(x, y, z):
        return 2.0 + np.sin(x + y + z)

    def f(x, y, z):
        s = np.pi
        grad = (s * np.cos(s * x) * np.sin(s * y) * np.sin(s * z) + y * z,
                s * np.sin(s * x) * np.cos(s * y) * np.sin(s * z) + x * z,
                s * np.sin(s * x) * np.sin(s * y) * np.cos(s * z) + x * y)
        lap = -3 * s * s * np.sin(s * x) * np.sin(s * y) * np.sin(s * z)
        dk = np.cos(x + y + z)
        return -(k(x, y, z) * lap + dk * (grad[0] + grad[1] + grad[2]))

    bc = ("dirichlet", u)
    errs = [_err(grid_problem((n, n, n), k=k, source=f, bc=bc), u) for n in (12, 24)]
    assert _order(errs, (12, 24)) == pytest.approx(2.0, abs=0.1)


def test_cell_coefficient_with_jump_converges_to_spsolve():
    """An array coefficient with a 1000x jump: every multigrid route agrees with spsolve."""
    import scipy.sparse.linalg as spla

    n = 32
    k = np.ones((n, n))
    k[n // 4: 3 * n // 4, n // 4: 3 * n // 4] = 1000.0
    p = grid_problem((n, n), k=k, source=1.0)
    ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel()).reshape(n, n)
    for method, precond in (("cg", "mg"), ("mg", "none"), ("cg", "amg")):
        sol = solve(p, method=method, precond=precond, rtol=1e-10)
        assert sol.converged, (method, precond)
        np.testing.assert_allclose(sol.field, ref, rtol=1e-7, atol=1e-9 * np.abs(ref).max())

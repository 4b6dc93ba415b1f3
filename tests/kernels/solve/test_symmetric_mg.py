"""The multigrid preconditioner is symmetric positive definite, so plain and pipelined CG
converge with it on a 1000:1 coefficient jump (reference: scipy's spsolve)."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver, diffusion, poisson
from skiff.kernels.solve.multigrid import GeometricMG


def _jump(n, lo=(0.25, 0.75), hi=(0.2, 0.55)):
    k = np.ones((n, n))
    k[int(lo[0] * n): int(lo[1] * n) + 1, int(hi[0] * n): int(hi[1] * n) + 3] = 1000.0
    return diffusion((n, n), k)


@pytest.mark.parametrize("interp", ["linear", "constant"])
@pytest.mark.parametrize("make", [lambda: poisson((32, 64)), lambda: _jump(64),
                                  lambda: poisson((8, 16, 8), bc="neumann")])
def test_preconditioner_is_symmetric_positive(make, interp):
    p = make()
    mg = GeometricMG(p.stencil, p.signs, interpolation=interp, singular=p.singular)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(p.shape3), rng.standard_normal(p.shape3)
    if p.singular:
        x -= x.mean()
        y -= y.mean()
    mx = mg.precondition(x, np.empty_like(x)).copy()
    my = mg.precondition(y, np.empty_like(y)).copy()
    np.testing.assert_allclose((mx * y).sum(), (my * x).sum(), rtol=1e-10)
    assert (mx * x).sum() > 0 and (my * y).sum() > 0


@pytest.mark.parametrize("method", ["cg", "pipecg"])
def test_plain_cg_and_pipecg_with_mg_on_a_1000_to_1_jump(method):
    p = _jump(96)
    ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel())
    sol = Solver(p, method=method, precond="mg").solve(rtol=1e-9, maxiter=200)
    assert sol.converged and sol.relative_residual <= 1e-9 * 1.01
    np.testing.assert_allclose(sol.field.ravel(), ref, rtol=0, atol=1e-7 * np.abs(ref).max())
    # Poisson stays on trilinear interpolation and converges in a few iterations
    pp = poisson((96, 96))
    sp_ = Solver(pp, method=method, precond="mg")
    assert "linear interpolation" in sp_.describe()
    assert sp_.solve(rtol=1e-9).iterations <= 8


def test_stationary_cycle_still_converges_on_the_jump():
    p = _jump(64)
    ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel())
    sol = Solver(p, method="mg").solve(rtol=1e-9, maxiter=60)
    assert sol.converged
    np.testing.assert_allclose(sol.field.ravel(), ref, atol=1e-7 * np.abs(ref).max())

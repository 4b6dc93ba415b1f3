"""'auto' after its Krylov method stagnates (round 38, h7): a moderate assembled matrix goes on
with a sparse LU (SciPy's spsolve is the oracle; pyamg's nonsymmetric SA stalls or diverges
there), and a tolerance below the matrix's rounding floor is named as such."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import skiff
from skiff.kernels.solve import solver as solver_mod

pyamg = pytest.importorskip("pyamg")


def _central_convection(m=24, peclet=8.0):
    """Central differences at cell Peclet 8: rows not dominant, AMG unsuited (at Peclet 4
    'auto''s growing restarts reach 1e-8 after 714 iterations with the numba kernels, and
    stall after 210 with their numpy twins)."""
    T = sp.diags([-1 - peclet / 2, 2.0, -1 + peclet / 2], [-1, 0, 1], shape=(m, m))
    eye = sp.identity(m)
    return (sp.kron(eye, T) + sp.kron(T, eye)).tocsr(), np.ones(m * m)


def _upwind_shifted(n=24):
    """Upwinded 2, -2, -0.5 each way, + 1e-3 i: so far from normal that an LU's residual is
    7e-8 |b| (round 37's -1.6, 2, -1 at 48^2, 2e-8, took 338 GMRES+AMG iterations)."""
    T = sp.diags([-2.0, 2.0, -0.5], [-1, 0, 1], shape=(n, n))
    eye = sp.identity(n)
    A = (sp.kron(eye, T) + sp.kron(T, eye) + 1e-3j * sp.identity(n * n)).tocsr()
    return A, np.random.default_rng(4).standard_normal(n * n).astype(complex)


def test_auto_goes_on_with_an_lu_where_gmres_amg_stalls():
    A, b = _central_convection()
    ref = spla.spsolve(A.tocsc(), b)
    stalled = skiff.solve(A, b, method="gmres")          # the user's explicit choice stays
    assert not stalled.converged and stalled.status.startswith("stagnated")
    res = []                                             # pyamg: no better
    ml = pyamg.smoothed_aggregation_solver(A, symmetry="nonsymmetric")
    x = ml.solve(b, tol=1e-8, accel="gmres", residuals=res, maxiter=100)
    assert not np.linalg.norm(b - A @ x) <= 1e-6 * np.linalg.norm(b)
    seen = []
    sol = skiff.solve(A, b, callback=seen.append)        # auto
    assert sol.converged and sol.relative_residual < 1e-12
    assert np.linalg.norm(sol.x - ref) <= 1e-10 * np.linalg.norm(ref)
    assert sol.info["solver"].startswith("direct (auto: gmres stagnated")
    assert sol.iterations == len(sol.residuals) - 1 == len(seen)   # the LU's step counts on


def test_the_lu_is_not_taken_above_its_size(monkeypatch):
    A, b = _central_convection()
    monkeypatch.setattr(solver_mod, "DIRECT_AFTER_STALL", A.shape[0] - 1)
    sol = skiff.solve(A, b)
    assert not sol.converged and sol.status.startswith("stagnated")
    assert sol.info["solver"].startswith("gmres")


def test_a_tolerance_below_rounding_is_named():
    A, b = _upwind_shifted()
    lu = spla.spsolve(A.tocsc(), b)                      # the oracle: LU's own residual
    floor = np.linalg.norm(b - A @ lu) / np.linalg.norm(b)
    assert floor > 1e-8                                  # rtol 1e-8 is out of reach
    sol = skiff.solve(A, b, rtol=1e-8)
    assert not sol.converged
    assert "below what rounding allows" in sol.status
    said = float(sol.status.split("eps |A| |x| / |b| = ")[1].split()[0])
    assert floor / 10 < said < floor * 10
    # the stalled GMRES's iterate is kept: no worse than the LU, which is not taken
    assert sol.relative_residual < floor and sol.info["solver"].startswith("gmres")

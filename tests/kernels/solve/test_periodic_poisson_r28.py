"""A periodic Poisson problem (singular: the constants are its null space), round 28: as a
matrix it is solved with its null space (CG+AMG; a b with a mean needs
``compatibility='project'``); a grid with periodic sides is refused naming that way. Oracles:
SciPy's ``lsqr`` (the minimum-norm solution) and pyamg's SA + CG (iterations)."""

from __future__ import annotations

import warnings

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from skiff.kernels.solve import poisson, solve


def _periodic(m=48):
    C = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m)).tolil()
    C[0, m - 1] = C[m - 1, 0] = -1.0
    A = sp.kronsum(C.tocsr(), C.tocsr()).tocsr()
    x, y = np.meshgrid(np.arange(m) + 0.5, np.arange(m) + 0.5, indexing="ij")
    b = (np.sin(2 * np.pi * x / m) + np.cos(4 * np.pi * y / m) * np.exp(np.sin(2 * np.pi * x / m)))
    b = b.ravel()
    return A, b - b.mean()


def test_periodic_matrix_as_lsqr_and_pyamg():
    A, b = _periodic()
    ref = sla.lsqr(A, b, atol=1e-14, btol=1e-14, iter_lim=20000)[0]
    ref -= ref.mean()
    sol = solve(A, b, rtol=1e-10)
    assert sol.method == "cg" and sol.converged
    x = sol.x - sol.x.mean()
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)
    count = [0]
    _, info = sla.cg(A, b, rtol=1e-10, callback=lambda xk: count.__setitem__(0, count[0] + 1))
    assert info == 0 and sol.iterations < count[0]
    # pyamg's SA + CG stopped on "indefinite preconditioner" (its coarsest level is
    # singular) at |r|/|b| = 1.7e-5 after 13 iterations here: skiff's answer is not worse
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xp = pyamg.smoothed_aggregation_solver(A).solve(b, tol=1e-10, accel="cg")
    assert sol.relative_residual <= max(np.linalg.norm(b - A @ xp) / np.linalg.norm(b), 1e-10)


def test_periodic_b_with_a_mean():
    A, b = _periodic(32)
    with pytest.raises(ValueError, match="compatibility='project'"):
        solve(A, b + 1.0)
    sol = solve(A, b + 1.0, compatibility="project", rtol=1e-10)
    assert sol.converged and abs(sol.x.mean()) <= 1e-10
    ref = sla.lsqr(A, b, atol=1e-14, btol=1e-14, iter_lim=20000)[0]
    assert np.linalg.norm(sol.x - (ref - ref.mean())) <= 1e-7 * np.linalg.norm(ref)


def test_grid_periodic_on_one_side_only_is_refused():
    """Grids have periodic sides since round 28 (test_periodic_grid_r28.py); a periodic side
    without its opposite is one clear error."""
    with pytest.raises(ValueError, match="periodic on one side only"):
        poisson((16, 16), bc={"x-": "periodic"})

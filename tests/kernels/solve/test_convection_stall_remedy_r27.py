"""Galerkin convection-diffusion at a cell Peclet number above 1 (round 27): AMG (skiff's, and
pyamg's nonsymmetric SA likewise) stalls; the stagnation status names an incomplete LU, and
that remedy reaches SciPy's ``spsolve`` answer."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as spla

skfem = pytest.importorskip("skfem")
pyamg = pytest.importorskip("pyamg")

from skfem import Basis, BilinearForm, ElementTriP1, MeshTri  # noqa: E402
from skfem.models.poisson import unit_load  # noqa: E402

import skiff  # noqa: E402


def _galerkin_convection(refs=5, eps=1e-3):
    ib = Basis(MeshTri.init_sqsymmetric().refined(refs), ElementTriP1())
    A = BilinearForm(lambda u, v, w: eps * (u.grad[0] * v.grad[0] + u.grad[1] * v.grad[1])
                     + (u.grad[0] + 0.5 * u.grad[1]) * v).assemble(ib)
    b = unit_load.assemble(ib)
    keep = ib.complement_dofs(ib.get_dofs())
    return A[keep][:, keep].tocsr(), b[keep]


def test_stalled_amg_names_an_incomplete_lu_that_works():
    A, b = _galerkin_convection()
    ref = spla.spsolve(A.tocsc(), b)
    # GMRES + AMG ('auto' goes on with an LU since round 38: test_stall_direct_r38h7.py)
    sol = skiff.solve(A, b, method="gmres", rtol=1e-8)
    assert not sol.converged and sol.status.startswith("stagnated")
    assert "spilu" in sol.status
    res = []                                            # pyamg stalls there too
    ml = pyamg.smoothed_aggregation_solver(A, symmetry="nonsymmetric")
    x = ml.solve(b, tol=1e-8, accel="gmres", residuals=res, maxiter=100)
    assert np.linalg.norm(b - A @ x) > 1e-6 * np.linalg.norm(b)
    fixed = skiff.solve(A, b, rtol=1e-10, M=spla.spilu(A.tocsc()))
    assert fixed.converged and fixed.iterations < 20
    assert np.linalg.norm(fixed.x - ref) <= 1e-7 * np.linalg.norm(ref)

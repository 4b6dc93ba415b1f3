"""Round 39 (h12): a pyamg user's hierarchy script on skiff's AMG: ``ml.levels[k].A/.P/.R``
(the coarsest level last), ``ml.operator_complexity()`` / ``ml.grid_complexity()`` as methods
and ``print(ml)``'s table of levels. Oracle: pyamg's own MultilevelSolver, fed skiff's levels,
computes the complexities with its formulas; pyamg's ``ml`` runs the same script."""
from __future__ import annotations

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
from pyamg.multilevel import MultilevelSolver

from skiff.kernels.solve.amg import SmoothedAggregation
from skiff.kernels.solve.amg_rs import RugeStuben


@pytest.fixture(scope="module")
def A():
    return pyamg.gallery.poisson((40, 40), format="csr")


def _user_script(ml):
    """What a pyamg user writes after setup; runs unchanged on pyamg's and skiff's ``ml``."""
    ops = [(lv.A.shape, lv.A.nnz) for lv in ml.levels]
    galerkin = max(abs(ml.levels[k].R @ ml.levels[k].A @ ml.levels[k].P
                       - ml.levels[k + 1].A).max() for k in range(len(ml.levels) - 1))
    return ops, galerkin, float(ml.operator_complexity()), float(ml.grid_complexity()), str(ml)


def _pyamg_from(levels):
    """pyamg's MultilevelSolver holding skiff's matrices, for pyamg's complexity formulas."""
    out = []
    for lv in levels:
        L = MultilevelSolver.Level()
        L.A = lv.A
        if lv.P is not None:
            L.P, L.R = lv.P, lv.R
        out.append(L)
    return MultilevelSolver(out, coarse_solver="pinv")


@pytest.mark.parametrize("build", [SmoothedAggregation, RugeStuben])
def test_levels_and_complexities_as_pyamg(A, build):
    ml = build(A, max_coarse=50)
    assert len(ml.levels) == ml.nlevels >= 3
    assert ml.levels[-1].A.shape[0] == ml.coarse_n and ml.levels[-1].P is None
    assert (ml.levels[0].A != A).nnz == 0              # the finest is the user's matrix
    for lv in ml.levels[:-1]:
        assert sp.issparse(lv.A) and sp.issparse(lv.P) and sp.issparse(lv.R)
        assert lv.P.shape == (lv.A.shape[0], lv.R.shape[0])
    ops, galerkin, oc, gc, text = _user_script(ml)
    assert galerkin < 1e-10 * abs(A).max()             # A_{k+1} = R_k A_k P_k, as pyamg's
    oracle = _pyamg_from(ml.levels)
    assert oc == pytest.approx(oracle.operator_complexity(), rel=1e-14)
    assert gc == pytest.approx(oracle.grid_complexity(), rel=1e-14)
    # still the number skiff code and its older tests read as an attribute
    assert ml.operator_complexity == oc and f"{ml.operator_complexity:.2f}" == f"{oc:.2f}"
    assert ml.grid_complexity + 0 == gc
    # print(ml): pyamg's table, one row per level (unknowns, nonzeros)
    rows = [ln.split() for ln in text.splitlines() if ln[:6].strip().isdigit()]
    assert [(int(r[1]), int(r[2])) for r in rows] == [(s[1], n) for s, n in ops]
    assert f"Operator Complexity:  {oc:6.3f}" in text
    assert f"Number of Levels:     {len(ml.levels)}" in text
    # the V-cycle is the one these levels make: its preconditioner still works unchanged
    x, info = ml.solve(np.ones(A.shape[0]), tol=1e-8, accel="cg", return_info=True)
    assert info == 0


def test_the_same_script_runs_on_pyamgs_ml(A):
    """The script above is pyamg's API: it runs on pyamg's own ``ml`` and gives pyamg's values
    (its complexities by its formulas), so skiff's answers mean the same things."""
    ml = pyamg.smoothed_aggregation_solver(A, max_coarse=400)
    ops, galerkin, oc, gc, text = _user_script(ml)
    assert oc == pytest.approx(ml.operator_complexity()) and "Grid Complexity" in text
    ours = SmoothedAggregation(A, max_coarse=400)
    # same finest operator, same level count on this Poisson matrix
    assert ops[0] == (ours.levels[0].A.shape, ours.levels[0].A.nnz)
    assert len(ours.levels) == len(ml.levels)

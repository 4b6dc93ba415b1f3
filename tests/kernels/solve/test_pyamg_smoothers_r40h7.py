"""Round 40 (h7): what a pyamg user reaches for after setup, on skiff's hierarchies:
``ml.cycle_complexity(cycle)``, ``ml.levels[k].presmoother(A, x, b)`` / ``postsmoother``
with ``ml.coarse_solver(A, b)`` (a V-cycle written by hand), and ``ml.levels[k].B`` (the near
null space on each level); all were AttributeErrors. Oracles: pyamg's own
``MultilevelSolver.cycle_complexity`` fed skiff's levels, the same hand-written cycle on
pyamg's ``ml`` against pyamg's ``aspreconditioner``, and pyamg's ``fit_candidates`` on
skiff's aggregates."""

from __future__ import annotations

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
from pyamg.aggregation import fit_candidates
from pyamg.multilevel import MultilevelSolver

from skiff.kernels.solve.amg import SmoothedAggregation
from skiff.kernels.solve.amg_rs import RugeStuben


@pytest.fixture(scope="module")
def A():
    return pyamg.gallery.poisson((32, 32), format="csr")


def _user_vcycle(ml, b):
    """pyamg's documented pieces: each level's smoothers, R, P, and the coarse solver."""
    def cycle(k, x, b):
        lv = ml.levels[k]
        if k == len(ml.levels) - 1:
            return ml.coarse_solver(lv.A, b)
        lv.presmoother(lv.A, x, b)   # in place
        x += lv.P @ cycle(k + 1, np.zeros(lv.R.shape[0]), lv.R @ (b - lv.A @ x))
        lv.postsmoother(lv.A, x, b)
        return x

    return cycle(0, np.zeros_like(b), b)


def test_the_hand_written_cycle_is_pyamgs_on_pyamgs_ml(A):
    """The oracle for the script: on pyamg's ml it is pyamg's own preconditioner."""
    ml = pyamg.smoothed_aggregation_solver(A, max_coarse=50)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    ref = ml.aspreconditioner() @ b
    assert np.allclose(_user_vcycle(ml, b), ref, rtol=1e-12, atol=1e-12 * abs(ref).max())


@pytest.mark.parametrize("build,kw", [(SmoothedAggregation, {}), (RugeStuben, {}),
                                      (SmoothedAggregation, {"symmetric": False})])
def test_smoothers_coarse_solver_and_cycle_complexity_as_pyamgs(A, build, kw):
    ml = build(A, max_coarse=50, **kw)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    ref = ml.aspreconditioner() @ b
    assert len(ml.levels) >= 3
    assert np.allclose(_user_vcycle(ml, b), ref, rtol=1e-12, atol=1e-12 * abs(ref).max())
    assert not hasattr(ml.levels[-1], "presmoother")   # pyamg's coarsest has none either
    levels = []
    for lv in ml.levels:
        L = MultilevelSolver.Level()
        L.A = lv.A
        if lv.P is not None:
            L.P, L.R = lv.P, lv.R
        levels.append(L)
    oracle = MultilevelSolver(levels, coarse_solver="pinv")
    for cycle in ("V", "W", "F", "AMLI"):
        assert ml.cycle_complexity(cycle) == pytest.approx(oracle.cycle_complexity(cycle),
                                                           rel=1e-14)
    assert ml.cycle_complexity() == pytest.approx(oracle.cycle_complexity("V"), rel=1e-14)
    with pytest.raises(ValueError, match="'V', 'W', 'F' or 'AMLI'"):
        ml.cycle_complexity("K")
    with pytest.raises(ValueError, match=r"give ml.levels\[1\].A"):
        ml.levels[1].presmoother(ml.levels[0].A, np.zeros(A.shape[0]), b)


def test_near_null_space_on_each_level_is_pyamgs_fit():
    Ae, Be = pyamg.gallery.linear_elasticity((16, 16), format="csr")
    ml = SmoothedAggregation(Ae, B=Be, improve=0, max_coarse=30)
    pml = pyamg.smoothed_aggregation_solver(Ae, B=Be, improve_candidates=None, max_coarse=30)
    assert [lv.B.shape[1] for lv in ml.levels] == [lv.B.shape[1] for lv in pml.levels] == \
        [3] * len(ml.levels)
    assert np.array_equal(ml.levels[0].B, Be)
    for k, (agg, count) in enumerate(ml.aggregates[:len(ml.levels) - 1]):
        n = agg.size
        agg_op = sp.csr_matrix((np.ones(n), (np.arange(n), agg)), shape=(n, count))
        T, R = fit_candidates(agg_op, ml.levels[k].B)
        assert ml.levels[k + 1].B.shape == R.shape
        assert np.allclose(ml.levels[k + 1].B, R, rtol=0, atol=1e-12 * abs(R).max())
    # with the default improvement the finest B is the improved candidates, as pyamg's
    improved = SmoothedAggregation(Ae, B=Be, max_coarse=30)
    assert improved.levels[0].B.shape == Be.shape
    assert not np.allclose(improved.levels[0].B, Be)

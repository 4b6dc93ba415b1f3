"""Round 30: a nose solve can start from a flow solved before (``start=``): another grid,
another Reynolds number (a Reynolds sweep, the estimator's next cycle). The oracle is the
same solve from rest: Newton converges to the same flow, so the drag must agree to Newton's
tolerance, with fewer Newton steps."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.solve.flow.adapt import graded_size, min_resolution
from skiff.kernels.solve.flow.nose import NoseShape
from skiff.kernels.solve.flow.nose_flow import NoseFlow, _continuation, solve_nose_flow

SHAPE = NoseShape(2.0, 0.6, 0.3)


def _size(factor=1.05):
    return graded_size(SHAPE, factor * min_resolution(SHAPE))


def test_the_continuation_from_a_start_climbs_by_factors_of_at_most_three():
    stages = _continuation(3000.0, 100.0)
    assert stages[-1] == 3000.0 and len(stages) == 4        # 100 * 30^(k/4)
    assert np.all(np.diff(np.log(stages)) <= np.log(3.0) + 1e-12)
    assert stages[0] / 100.0 == pytest.approx(30.0 ** 0.25)
    assert _continuation(500.0, 2000.0) == [500.0]           # coming down: one stage
    assert _continuation(1000.0) == pytest.approx([1000 / 9, 1000 / 3, 1000])


@pytest.fixture(scope="module")
def cold():
    """The oracle: Re 240 on the finer grid, from rest (continuation 80 -> 240)."""
    return solve_nose_flow(SHAPE, _size(1.2), 240.0, mode="steady", keep=False)


def test_a_start_on_another_grid_and_re_gives_the_solve_from_rest(cold):
    low = solve_nose_flow(SHAPE, _size(1.05), 60.0, mode="steady")       # coarser, lower Re
    warm = solve_nose_flow(SHAPE, _size(1.2), 240.0, mode="steady", keep=False, start=low)
    assert warm.cells == cold.cells and warm.cells > low.cells
    assert warm.cd == pytest.approx(cold.cd, rel=1e-5)
    assert warm.cl == pytest.approx(cold.cl, rel=1e-5, abs=1e-6)
    assert np.allclose(warm.cp["cp"], cold.cp["cp"], atol=1e-4)
    assert warm.newton_steps < cold.newton_steps, (warm.newton_steps, cold.newton_steps)


def test_a_wrong_start_is_refused_with_the_fix():
    flow = NoseFlow(SHAPE, 50.0, 1.0, 0.0, 10, 100, 0.1, "steady")      # keep=False: no fields
    with pytest.raises(ValueError, match="keep=True"):
        solve_nose_flow(SHAPE, _size(), 100.0, start=flow)
    with pytest.raises(ValueError, match="another shape"):
        solve_nose_flow(NoseShape(2.5, 0.6, 0.3), _size(), 100.0, start=flow)
    with pytest.raises(TypeError, match="start takes a NoseFlow"):
        solve_nose_flow(SHAPE, _size(), 100.0, start={"cd": 1.0})


def test_a_reynolds_sweep_is_the_separate_solves_in_fewer_newton_steps(cold):
    from skiff.aero import reynolds_sweep

    r = 1.2 * min_resolution(SHAPE)
    sweep = reynolds_sweep([240.0, 80.0], shape=SHAPE, resolution=r, mode="steady")
    assert [f.re for f in sweep] == [240.0, 80.0]           # the order asked
    assert sweep[0].cells == cold.cells
    assert sweep[0].cd == pytest.approx(cold.cd, rel=1e-5)
    assert sweep[0].newton_steps < cold.newton_steps
    assert sweep[0].state is None and sweep[1].state is None  # keep=False frees the fields
    # laminar drag falls with the Reynolds number
    assert sweep[0].cd < sweep[1].cd
    with pytest.raises(ValueError, match="Reynolds number must be > 0"):
        reynolds_sweep([100.0, -1.0], shape=SHAPE)

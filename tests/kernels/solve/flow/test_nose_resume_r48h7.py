"""A cancelled time-marching nose solve goes on from where it stopped (round 48 h7): the
30 H/U march of ``--flow unsteady`` (or ``auto`` after Newton fails) kept nothing and a
cancel lost it all. Now it keeps its state in the run folder (as the cylinder's, round 47
h21) and a solve given that file goes on from it, with more time if asked. The oracle is
the same march never stopped (the unsteady mode's own test checks its averages against its
history): the resumed coefficient history equals it to 1e-10 at every step."""

import numpy as np
import pytest

from skiff.kernels.backend.report import JobCancelled
from skiff.kernels.solve.flow import dfg
from skiff.kernels.solve.flow.adapt import graded_size, min_resolution
from skiff.kernels.solve.flow.nose import NoseShape, nose_mesh
from skiff.kernels.solve.flow.nose_flow import solve_nose_flow
from tests.helpers.stop_at import StopAtLook as StopAt  # asks to stop at its n-th look

SHAPE = NoseShape(2.0, 0.6, 0.3)


@pytest.fixture(scope="module")
def grid():
    size = graded_size(SHAPE, 1.05 * min_resolution(SHAPE))
    return size, nose_mesh(SHAPE, size)


def _solve(grid, t_end, **kw):
    size, mesh = grid
    return solve_nose_flow(SHAPE, size, 50.0, mode="unsteady", dt=0.1, t_end=t_end,
                           mesh=mesh, keep=False, **kw)


def test_a_cancelled_march_goes_on_with_more_time(grid, tmp_path):
    with pytest.raises(JobCancelled):
        _solve(grid, 0.3, reporter=StopAt(3), state_dir=tmp_path)      # after 2 of 3 steps
    kept = tmp_path / dfg.STATE_FILE
    with np.load(kept) as z:
        assert int(z["step"]) == 2
    whole = _solve(grid, 0.5)                                           # never stopped
    res = _solve(grid, 0.5, resume_from=kept)
    assert res.time_steps == 5 and res.mode == "unsteady"
    for key in ("t", "cd", "cl"):
        np.testing.assert_allclose(res.history[key], whole.history[key], rtol=0, atol=1e-10)
    assert res.cd == pytest.approx(whole.cd, abs=1e-10)
    with pytest.raises(ValueError, match=r"--re: 50 kept, 60 asked"):
        solve_nose_flow(SHAPE, grid[0], 60.0, mode="unsteady", dt=0.1, t_end=0.5,
                        mesh=grid[1], keep=False, resume_from=kept)
    with pytest.raises(ValueError, match="time-marching mode"):
        solve_nose_flow(SHAPE, grid[0], 50.0, mode="steady", mesh=grid[1], keep=False,
                        resume_from=kept)
    with pytest.raises(ValueError, match="give a --t-end of 0.2 or more"):
        _solve(grid, 0.1, resume_from=kept)

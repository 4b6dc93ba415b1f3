"""A cancelled unsteady cylinder run goes on with options changed where that is safe (round 48
h7): more time (``jobs resume ID --t-end 10``: the shedding had not settled) goes on from the
kept step; another grid, Re, dt, case or channel is refused in one line naming the option
(round 47 refused every change alike, "the state of another run" with two reprs). The oracle
is the same run never stopped, with the longer ``t_end`` (its values are checked against
DFG's by test_dfg*): the resumed coefficient history equals it to 1e-10 at every step."""

import numpy as np
import pytest

from skiff.kernels.backend.report import JobCancelled
from skiff.kernels.solve.flow import MIN_RESOLUTION, dfg, run_case
from skiff.kernels.solve.flow.job import run as run_job
from tests.helpers.stop_at import StopAtLook as StopAt  # asks to stop at its n-th look

KW = {"resolution": MIN_RESOLUTION, "dt": 0.02, "keep_fields": False}


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A 2d-2 job of 3 steps (t_end 0.06) cancelled after 2, its kept state."""
    folder = tmp_path_factory.mktemp("run")
    stop = StopAt(3)
    stop.run_dir = folder
    with pytest.raises(JobCancelled):
        run_job({"problem": "cylinder", "case": "2d-2", "t_end": 0.06, **KW}, stop)
    return folder / dfg.STATE_FILE


def test_more_time_goes_on_as_the_longer_run_never_stopped(kept):
    whole = run_case("2d-2", t_end=0.1, **KW)               # 5 steps, never stopped
    res = run_case("2d-2", t_end=0.1, resume_from=kept, **KW)
    assert dfg.resume_mismatch(kept, case="2d-2", t_end=0.1, resolution=MIN_RESOLUTION,
                               dt=0.02) is None
    assert res.steps == 5 and res.details["resumed_at_step"] == 2
    for key in ("t", "cd", "cl", "dp"):
        np.testing.assert_allclose(res.history[key], whole.history[key], rtol=0, atol=1e-10)


@pytest.mark.parametrize("change, named", [
    ({"resolution": MIN_RESOLUTION + 8}, "--resolution (another grid): 16 kept, 24 asked"),
    ({"dt": 0.01}, "--dt"),
    ({"re": 90.0}, "--re (the inflow): Re 100 kept, Re 90 asked"),
    ({"channel": {"height": 0.82, "centre": (0.2, 0.41)}}, "--channel"),
    ({"t_end": 0.02}, "give a --t-end of 0.04 or more"),       # before the kept step 2
])
def test_an_unsafe_change_is_refused_naming_it(kept, change, named):
    options = {**KW, "t_end": 0.1, **change}
    options.pop("keep_fields")
    with pytest.raises(ValueError, match="cannot resume from") as err:
        run_case("2d-2", resume_from=kept, keep_fields=False, **options)
    assert named in str(err.value) and "\n" not in str(err.value)
    assert dfg.resume_mismatch(kept, case="2d-2", **options) == str(err.value)  # no mesh


def test_another_case_or_not_a_state_is_refused(kept, tmp_path):
    assert "--case: 2d-2 kept, 2d-3 asked" in dfg.resume_mismatch(
        kept, case="2d-3", resolution=MIN_RESOLUTION, dt=0.02, t_end=0.1)
    assert "is steady" in dfg.resume_mismatch(kept, case="2d-1")
    other = tmp_path / "x.npz"
    np.savez(other, a=np.zeros(2))
    assert "not a kept flow state" in dfg.resume_mismatch(other, case="2d-2")

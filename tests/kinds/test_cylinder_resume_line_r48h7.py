"""``solve cylinder --x0 RUN/flow-state.npz`` goes on from a stopped unsteady run's kept
state (round 48 h7's request: ``jobs resume ID --t-end 10`` runs that line): config key
``resume_from``; another grid, dt, or a t_end before the kept step refused before the job,
naming the option; the run itself equals the longer run never stopped (the flow kernel's
test_cylinder_resume_options_r48h7 checks that, to 1e-10)."""

import pytest

from skiff.kernels.backend.report import JobCancelled
from skiff.kernels.solve.flow import MIN_RESOLUTION, dfg
from skiff.kernels.solve.flow.job import run as run_job
from skiff.kinds.solve import to_config
from tests.helpers.stop_at import StopAtLook as StopAt  # asks to stop at its n-th look


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    stop = StopAt(4)                              # cancelled after 3 of 5 steps
    stop.run_dir = tmp_path_factory.mktemp("run")
    with pytest.raises(JobCancelled):
        run_job({"problem": "cylinder", "case": "2d-2", "resolution": MIN_RESOLUTION,
                 "dt": 0.02, "t_end": 0.1}, stop)
    return stop.run_dir / dfg.STATE_FILE


def _values(kept, **change):
    return {"problem": "cylinder", "case": "2d-2", "resolution": MIN_RESOLUTION, "dt": 0.02,
            "t_end": 0.16, "x0": str(kept), **change}


def test_x0_of_a_cylinder_is_its_kept_state(kept):
    cfg = to_config(_values(kept))
    assert cfg["resume_from"] == str(kept) and cfg["t_end"] == 0.16


@pytest.mark.parametrize("change, named", [
    ({"resolution": MIN_RESOLUTION + 8}, "--resolution (another grid): 16 kept, 24 asked"),
    ({"dt": 0.01}, "--dt"),
    ({"t_end": 0.04}, "give a --t-end of 0.06 or more"),
    ({"case": "2d-1", "dt": None, "t_end": None}, "case 2d-1 is steady"),
])
def test_an_unsafe_change_is_refused_before_the_job(kept, change, named):
    with pytest.raises(ValueError) as err:
        to_config(_values(kept, **change))
    assert named in str(err.value) and "\n" not in str(err.value)


def test_a_cancelled_nose_march_goes_on_from_its_kept_state(tmp_path):
    """``jobs resume ID`` of a cancelled ``train-nose --flow unsteady`` job: its kept state
    (the flow kernel's test_nose_resume_r48h7 checks the run it gives)."""
    from types import SimpleNamespace

    from skiff.kinds import KINDS

    job = SimpleNamespace(id="n1", run_dir=tmp_path, status="cancelled",
                          config={"problem": "train-nose", "flow": "unsteady", "re": 50.0},
                          meta={"command": "python -m skiff solve train-nose"})
    with pytest.raises(ValueError, match="is a flow"):      # it kept nothing: said so
        KINDS["solve"].resume_config(job)
    (tmp_path / "flow-state.npz").write_bytes(b"")
    config = KINDS["solve"].resume_config(job)
    assert config["resume_from"] == str(tmp_path / "flow-state.npz") and config["re"] == 50.0

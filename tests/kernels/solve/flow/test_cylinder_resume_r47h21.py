"""A cancelled unsteady cylinder run goes on from where it stopped (round 47 h21): it keeps its
state (velocity, pressure, BDF2's step before, the step, the coefficients so far) in its run
folder when cancelled and every few steps, and a run given that file goes on from it. The
oracle is the same run never stopped (its values are checked against DFG's by test_dfg*):
the resumed coefficient history equals it to 1e-10 at every step."""

import numpy as np
import pytest

from skiff.kernels.backend.report import JobCancelled, NullReporter
from skiff.kernels.solve.flow import MIN_RESOLUTION, dfg, run_case
from skiff.kernels.solve.flow.job import run as run_job

KW = {"resolution": MIN_RESOLUTION, "dt": 0.02, "t_end": 0.12, "keep_fields": False}


class StopAt(NullReporter):
    """Asks to stop before time step ``n`` (run_steps asks once before each step)."""

    def __init__(self, n=None):
        super().__init__()
        self.n, self.asked = n, 0

    def should_stop(self):
        self.asked += 1
        return self.n is not None and self.asked >= self.n


@pytest.fixture(scope="module")
def whole():
    return run_case("2d-3", **KW)            # 6 steps, never stopped


def test_a_cancelled_run_goes_on_as_if_never_stopped(whole, tmp_path, monkeypatch):
    monkeypatch.setattr(dfg, "keep_every", lambda steps: 1000)   # kept on cancel only
    stop = StopAt(4)                                             # after 3 steps
    stop.run_dir = tmp_path                                      # the job's run folder
    config = {"problem": "cylinder", "case": "2d-3", **KW}
    with pytest.raises(JobCancelled):
        run_job(config, stop)                                    # as %solve cylinder runs
    kept = tmp_path / dfg.STATE_FILE
    with np.load(kept) as z:
        assert int(z["step"]) == 3 and z["history"].shape == (3, 4)
    again = tmp_path / "again"
    again.mkdir()
    monkeypatch.setattr(dfg, "keep_every", lambda steps: 2)      # kept as it goes: 4 (not 6)
    res = run_case("2d-3", state_dir=again, resume_from=kept, **KW)
    assert res.steps == 6 and res.details["resumed_at_step"] == 3
    for key in ("t", "cd", "cl", "dp"):
        np.testing.assert_allclose(res.history[key], whole.history[key], rtol=0, atol=1e-10)
    for key, value in whole.values.items():
        assert res.values[key] == pytest.approx(value, abs=1e-10)
    with np.load(again / dfg.STATE_FILE) as z:      # the bounded cadence: step 4 of 6
        assert int(z["step"]) == 4
        np.testing.assert_allclose(z["history"][:, 2], whole.history["cl"][:4], atol=1e-10)


def test_a_state_of_another_run_is_refused(tmp_path):
    same = {"case": "2d-3", "dt": 0.02}
    st = dfg.FlowState(np.zeros(3), np.zeros(3), np.zeros(2))
    dfg._keep_state(tmp_path / "s.npz", 1, st, None, np.zeros((6, 4)), same)
    n, kept, prev, history = dfg._read_state(tmp_path / "s.npz", same, 6)
    assert n == 1 and prev is None and history.shape == (1, 4)
    with pytest.raises(ValueError, match="state of another run"):
        dfg._read_state(tmp_path / "s.npz", {**same, "dt": 0.03}, 6)

"""Round 27, as a user: a job that stops making progress (held by a lock, a slow file
system, a peer) kept showing the rate and ETA of before ('ETA 0.8 s, 25.7 steps/s' for a
minute, the elapsed time going on beside it). Now the views say how long it has been quiet.
The oracle: the times of the job's own progress events, read from its events file."""

from __future__ import annotations

import pytest

from skiff.jobs import launch
from skiff.jobs.state import STALL_MIN_S, STALL_RATIO, JobState
from skiff.jobs.terminal import live_line, plain_line

from .waiting import wait_for


def _state(times):
    state = JobState()
    state.apply({"t": times[0], "type": "status", "status": "running", "rank": 0})
    for i, t in enumerate(times, 1):
        state.apply({"t": t, "type": "progress", "done": i, "total": 100, "unit": "step",
                     "rank": 0})
    return state


@pytest.mark.parametrize("gap", [0.1, 4.0])
def test_quiet_for_longer_than_its_usual_gap_is_stalled(gap):
    times = [1000.0 + gap * i for i in range(20)]
    state = _state(times)
    limit = max(STALL_MIN_S, STALL_RATIO * gap)
    assert state.stalled(times[-1] + 0.9 * limit) is None  # still within its pace
    assert state.stalled(times[-1] + 1.1 * limit) == pytest.approx(1.1 * limit)
    state.apply({"t": times[-1] + 1, "type": "status", "status": "done", "rank": 0})
    assert state.stalled(times[-1] + 10 * limit) is None  # ended: nothing to wait for


def test_a_held_job_shows_how_long_it_has_been_quiet_not_its_old_eta(tmp_path):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 20, "sleep": 0.01, "hold_at": 11, "hold_until": str(gate)})
    try:
        wait_for(lambda: job.refresh().done == 10, 30, "the steps before the hold")
        last = job.state.progress_times[-1][0]
        moving = plain_line(job, now=last)
        assert "ETA" in moving and "no progress" not in moving
        later = last + 60.0
        quiet = plain_line(job, now=later)
        assert "no progress for 1 min" in quiet and "ETA" not in quiet, quiet
        assert "no progress for 1 min" in live_line(job, 200, now=later)
    finally:
        gate.touch()
    assert job.wait(30).status == "done"


def test_the_notebook_view_says_it_too(tmp_path, monkeypatch):
    """The job view redraws its progress line while the job is quiet (it redrew only on a
    new event, so the old ETA stayed); how long is the state's answer (tested above)."""
    from skiff.widgets.job_view import JobView

    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 20, "sleep": 0.01, "hold_at": 11, "hold_until": str(gate)})
    try:
        wait_for(lambda: job.refresh().done == 10, 30, "the steps before the hold")
        view = JobView(job, poll=3600)  # no poller: updates only when asked below
        view.update(force=True)
        assert "no progress" not in view.progress_text.value
        monkeypatch.setattr(JobState, "stalled", lambda self, now: 75.0)
        view.min_gap = 0.0
        view.update()  # no new event since: it redrew nothing before
        assert "no progress for 1 min 15 s" in view.progress_text.value
        assert "ETA" not in view.progress_text.value
        view.close()
    finally:
        gate.touch()
    assert job.wait(30).status == "done"

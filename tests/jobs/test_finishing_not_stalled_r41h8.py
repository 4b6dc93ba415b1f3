"""Round 41, as a user: an ocr-rec run's final evaluation (the export, then its held-out and
general sets read with the tuned model: minutes on PP-OCRv6) showed "no progress for 3 min"
in the terminal, the notebook's view and the Jobs sidebar, as if it hung at 100%. A running
job whose progress is at its total is working on what comes after its last step: the views
say "finishing" and what the job said it does then, and keep the stall warning for a job
quiet before its last step. The oracle: the job's own log line written after its last step
(the demo kind's ``after_until`` holds it there, running, as long as the test needs)."""

from __future__ import annotations

from skiff.jobs import launch
from skiff.jobs.terminal import live_line, plain_line
from skiff.lab.payload import progress_label

from .waiting import wait_for


def test_a_job_past_its_last_step_is_finishing_not_stalled(tmp_path):
    from skiff.widgets.job_view import JobView

    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "after_until": str(gate)})
    try:
        wait_for(lambda: any("after the last step" in m for _, _, m in job.refresh().logs),
                 30, "the job's line after its last step")
        state = job.state
        assert state.status == "running" and state.done == state.total == 3
        said = [m for _, _, m in state.logs if "after the last step" in m][0]
        later = state.progress_times[-1][0] + 600.0  # ten minutes on it
        for line in (plain_line(job, now=later), live_line(job, 200, now=later)):
            assert "no progress" not in line and "finishing" in line and said in line, line
        assert state.stalled(later) is None
        label = progress_label(state, later)  # the Jobs sidebar's line
        assert "no progress" not in label and f"finishing: {said}" in label, label
        view = JobView(job, poll=3600)
        view.update(force=True)
        assert "finishing" in view.progress_text.value and said in view.progress_text.value
        view.close()
    finally:
        gate.touch()
    assert job.wait(30).status == "done"


def test_a_job_quiet_before_its_last_step_is_still_said_stalled(tmp_path):
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 4, "sleep": 0.0, "hold_at": 3, "hold_until": str(gate)})
    try:
        wait_for(lambda: job.refresh().done == 2 and any(
            "holding until" in m for _, _, m in job.state.logs), 30, "the hold at step 3")
        later = job.state.progress_times[-1][0] + 600.0
        line = plain_line(job, now=later)
        assert "no progress for 10 min" in line and "finishing" not in line, line
        assert job.state.finishing() is None
    finally:
        gate.touch()
    assert job.wait(30).status == "done" and job.state.finishing() is None

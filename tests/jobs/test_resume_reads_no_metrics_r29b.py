"""Round 29, as a terminal user: ``jobs resume`` of a killed long training took 24 s with
nothing left to train. Part of it: the old job was loaded with every metric line of its log
(a killed job's log is never folded: 200,000 steps' worth), which a resume never reads. It
is now loaded as a snapshot. The oracle: the config the kind resumes from a full load
(metrics and all), which the resume must launch unchanged."""

from __future__ import annotations

import skiff.jobs as jobs_pkg
from skiff.jobs import Job, jobs_action, submit
from skiff.jobs.job import _LIVE
from skiff.jobs.state import JobState
from skiff.kinds import KINDS


def test_resume_reads_no_metric_line_and_launches_the_same_config(runs_dir, monkeypatch):
    first, _ = submit("train", "mlp --steps 30")
    assert first.wait(120).status == "done"
    _LIVE.clear()  # as in a new terminal: the job is read from its run folder

    seen = {"metric": 0}
    apply = JobState.apply

    def counting(self, event):
        seen["metric"] += event.get("type") == "metric"
        return apply(self, event)

    monkeypatch.setattr(JobState, "apply", counting)
    full = Job.load(first.id)  # what the resume read before: every metric line
    read_by_a_full_load = seen["metric"]
    assert read_by_a_full_load >= 30
    expected = KINDS["train"].resume_config(full)
    _LIVE.clear()

    launched = {}

    def fake_launch(kind, config, **options):
        launched.update(kind=kind, config=config)
        return "new job"

    monkeypatch.setattr(jobs_pkg, "launch", fake_launch)
    seen["metric"] = 0
    assert jobs_action("resume", first.id) == "new job"
    assert seen["metric"] == 0
    assert launched["kind"] == "train" and launched["config"] == expected
    assert launched["config"]["resume"]  # from the checkpoint the job wrote


def test_resume_of_a_running_job_is_still_refused(runs_dir):
    """The snapshot of a job still running is loaded whole again (its status then says it
    runs): the resume is refused as before."""
    import pytest

    job, _ = submit("train", "mlp --steps 1000000")
    try:
        _LIVE.clear()
        with pytest.raises(ValueError, match="still running: cancel it before resuming"):
            jobs_action("resume", job.id)
    finally:
        job.cancel()
        job.wait(60)

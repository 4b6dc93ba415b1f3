"""A relative ``SKIFF_RUNS`` is taken from the folder the session started in, once: a
notebook's ``%cd`` while a job ran made its next event land in a folder that is not there
(the job failed, "its run folder was removed while it ran"). Round 31."""

from __future__ import annotations

import os

from skiff.jobs import Job, launch
from skiff.jobs.store import runs_root


def test_a_job_goes_on_after_the_working_folder_changes(tmp_path, monkeypatch):
    start, other = tmp_path / "start", tmp_path / "other"
    start.mkdir()
    other.mkdir()
    monkeypatch.chdir(start)
    monkeypatch.setenv("SKIFF_RUNS", "my runs")
    assert runs_root() == start / "my runs" and runs_root("x") == start / "x"
    gate = tmp_path / "go"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    try:
        assert job.run_dir == start / "my runs" / job.id
        os.chdir(other)  # the notebook's %cd while the job waits at step 2
        gate.touch()
        job.wait(60)
    finally:
        gate.touch()
    assert job.status == "done", job.error
    assert job.result["steps"] == 3
    assert not (other / "my runs").exists()
    again = Job.load(job.id, root=start / "my runs")
    assert again.status == "done" and again.result == job.result

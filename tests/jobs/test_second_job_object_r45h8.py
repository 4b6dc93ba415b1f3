"""Round 45 (h8): a second Job object of a job whose run folder is removed while it runs.

The runner's watch (round 44 h15) ends the job's own object ("its run folder ... was removed
while it ran"); a second object of it in the same process (``Job(folder)``, made before the
removal) read nothing more and its ``wait()`` waited for ever ("still queued"). It now ends
as the job's own object ended, or, with no object here that runs it, as a job seen from
elsewhere. No timing: each wait is for the end (bounded)."""

from __future__ import annotations

import shutil

import pytest

from skiff.jobs import Job, launch
from skiff.jobs import thread as thread_runner


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(thread_runner, "FOLDER_LOOK_S", 0.05, raising=False)
    monkeypatch.setattr(thread_runner, "FOLDER_GRACE_S", 0.1, raising=False)


def _remove(folder):
    for _ in range(50):  # the job may write a line while the folder is taken apart
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return
    raise AssertionError(f"{folder} not removed")


def test_a_second_object_ends_as_the_jobs_own(runs_dir, tmp_path, quick):
    never = tmp_path / "never"  # the demo waits, running, at step 2 until it exists
    job = launch("demo", {"steps": 3, "hold_at": 2, "hold_until": str(never)}, name="held")
    try:
        second = Job(job.run_dir)
        assert second is not job
        for _ in range(600):  # running, bounded (no sleep: each wait is for an event)
            if second.refresh().status == "running":
                break
            job._done.wait(0.05)
        assert second.status == "running"
        _remove(job.run_dir)
        assert second.wait(60).refresh().final, "the second object was not ended"
    finally:
        never.touch()
    assert job.wait(60).status == "failed"
    assert (second.status, second.error) == (job.status, job.error)
    assert f"its run folder {job.run_dir} was removed while it ran" in second.error


def test_an_object_of_a_job_run_nowhere_here_ends_too(runs_dir):
    made = Job.create("demo", {}, target="test", runner="thread")
    second = Job(made.run_dir)
    shutil.rmtree(made.run_dir)
    assert second.wait(30).status == "failed"
    assert f"its run folder {made.run_dir} was removed while it ran" in second.error

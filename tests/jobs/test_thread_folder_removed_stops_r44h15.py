"""Round 44 (h15): a thread job whose run folder is removed while it runs is stopped.

Before, it worked on until its next write failed (round 44 h8: its view said so at once,
but the work went on for nothing: nothing more of it can be recorded or read): a model
loading, a direct solve, a step of minutes. Now the runner looks for the folder every
``FOLDER_LOOK_S``: a kind that asks ``should_stop`` stops at its next look; one that never
asks is stopped where it stands (its next Python line) ``FOLDER_GRACE_S`` later.

No timing: the test waits for the job's end (bounded), and the oracle is what the job's own
code saw (whether it asked, whether it was interrupted) and the job's end in this process."""

from __future__ import annotations

import shutil
import threading

import pytest

from skiff.jobs import launch
from skiff.jobs import thread as thread_runner


@pytest.fixture
def quick(monkeypatch):
    # raising=False: the test runs (and fails) on a runner without the watch
    monkeypatch.setattr(thread_runner, "FOLDER_LOOK_S", 0.05, raising=False)
    monkeypatch.setattr(thread_runner, "FOLDER_GRACE_S", 0.1, raising=False)


def _start(fn, name):
    started = threading.Event()

    def run(config, reporter):
        started.set()
        return fn(config, reporter)

    job = launch("demo", {}, fn=run, name=name)
    assert started.wait(30)
    return job


def test_a_step_that_never_asks_is_stopped_where_it_stands(runs_dir, quick):
    seen = {"interrupted": None, "loops": 0}
    release = threading.Event()  # bounds the loop if nothing stops it

    def long_step(config, reporter):  # a model loading: no look at the stop, no write
        try:
            while not release.is_set() and seen["loops"] < 10**9:
                seen["loops"] += 1
        except BaseException as exc:
            seen["interrupted"] = type(exc).__name__
            raise
        return {"loops": seen["loops"]}

    job = _start(long_step, "held")
    try:
        shutil.rmtree(job.run_dir)
        assert job.wait(60).refresh().final, "the job was not stopped"
    finally:
        release.set()
    assert seen["interrupted"] == "FolderRemoved", seen
    assert job.status == "failed"
    assert f"its run folder {job.run_dir} was removed while it ran" in job.error, job.error
    assert "it was stopped in its step" in job.error, job.error
    assert not job.run_dir.exists()  # nothing written back into the removed folder


def test_a_kind_that_asks_stops_at_its_next_look(runs_dir, quick):
    seen = {"asked": 0}
    release = threading.Event()

    def polite(config, reporter):
        while not release.wait(0.01):
            seen["asked"] += 1
            if reporter.should_stop():
                return {"stopped": True}
        return {"stopped": False}

    job = _start(polite, "asks")
    try:
        shutil.rmtree(job.run_dir)
        assert job.wait(60).refresh().final
    finally:
        release.set()
    assert job.value == {"stopped": True}  # it took the stop, nothing raised into it
    assert job.status == "failed" and "was removed while it ran" in job.error, job.error
    assert not job.run_dir.exists()


def test_a_job_whose_folder_stays_is_not_touched(runs_dir, quick):
    release = threading.Event()
    flags = []

    def steady(config, reporter):
        release.wait(60)
        flags.append(reporter.should_stop())
        return {"ok": True}

    job = _start(steady, "kept")
    # several looks of the watcher pass (it joins the job's thread FOLDER_LOOK_S at a time)
    with pytest.raises(TimeoutError):
        job.wait(0.5)
    release.set()
    assert job.wait(60).status == "done", job.error
    assert flags == [False]

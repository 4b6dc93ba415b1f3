import os
import time

import pytest

from skiff.jobs import Job, JobFailed, launch, list_jobs
from skiff.jobs.reporter import NullReporter, RunReporter
from skiff.jobs.store import RunFolderError, read_json


def test_demo_job_runs_and_keeps_its_state_in_the_run_folder(runs_dir):
    t0 = time.monotonic()
    job = launch("demo", {"steps": 4, "sleep": 0.0})
    assert time.monotonic() - t0 < 5  # returns at once (sanity, not a benchmark)
    job.wait(10)
    assert job.status == "done"
    assert job.result == {"steps": 4, "ranks": 1, "allreduce": 4.0}
    assert job.run_dir.parent == runs_dir
    meta = read_json(job.run_dir / "config.json")
    assert meta["kind"] == "demo" and meta["config"]["steps"] == 4
    types = [e["type"] for e in job.events()]
    assert types[0] == "status" and types[-1] == "status"
    assert [v for _, v, _ in job.state.metrics["value"]] == [1.0, 2.0, 3.0, 4.0]


def test_failing_function_keeps_traceback_and_notebook_unharmed():
    def boom(config, reporter):
        reporter.progress(1, 3)
        raise ZeroDivisionError("division by zero in step 1")

    job = launch("custom", fn=boom).wait(10)
    assert job.status == "failed"
    assert "ZeroDivisionError: division by zero in step 1" in job.error
    assert "Traceback" in job.error and "boom" in job.error
    assert (job.run_dir / "logs" / "traceback.txt").read_text().startswith("Traceback")
    with pytest.raises(JobFailed, match="division by zero"):
        job.wait(raise_on_error=True)


def test_cancel_is_cooperative():
    def slow(config, reporter):
        for i in range(1000):
            reporter.check()
            reporter.progress(i, 1000)
            time.sleep(0.01)
        return {"finished": True}

    job = launch("custom", fn=slow)
    time.sleep(0.2)
    job.cancel()
    job.wait(10)
    assert job.status == "cancelled"
    assert (job.run_dir / "cancel").exists()


def test_value_is_the_live_object_and_result_its_json():
    class Thing:
        def to_json(self):
            return {"answer": 42}

    thing = Thing()
    job = launch("custom", fn=lambda c, r: thing).wait(10)
    assert job.value is thing
    assert job.result == {"answer": 42}


def test_done_callback_runs_once_even_if_added_late():
    seen = []
    job = launch("demo", {"steps": 1, "sleep": 0})
    job.add_done_callback(lambda j: seen.append(j.status))
    job.wait(10)
    time.sleep(0.05)
    job.add_done_callback(lambda j: seen.append("late"))
    assert seen == ["done", "late"]


def test_wait_returns_after_the_done_callbacks_even_slow_ones():
    # a view's last update (its chart drawn) runs as a done callback; on a loaded machine it
    # can take seconds, and what it sends must reach the cell that waits (nbclient stops
    # listening when the last cell ends): wait() used to give it 5 s at most
    import threading

    release, finished = threading.Event(), []

    def slow(job):
        release.wait(10)
        finished.append(job.status)

    gate = threading.Event()

    def work(config, reporter):
        gate.wait(10)
        return 1

    job = launch("custom", fn=work)
    job.add_done_callback(slow)
    timer = threading.Timer(5.5, release.set)  # longer than the old cap
    gate.set()
    timer.start()
    try:
        job.wait(30)
        assert finished == ["done"]
    finally:
        timer.cancel()
        release.set()


def test_a_done_callback_may_wait_for_its_own_job():
    seen = []
    job = launch("custom", fn=lambda config, reporter: 2)
    job.add_done_callback(lambda j: seen.append(j.wait(5).status))
    job.wait(20)
    assert seen == ["done"]


def test_unknown_kind_and_bad_np():
    with pytest.raises(ValueError, match="unknown job kind 'nope'.*demo"):
        launch("nope")
    with pytest.raises(ValueError, match="np must be a positive integer, got 0"):
        launch("demo", np=0)
    with pytest.raises(ValueError, match="registered kind"):
        launch("custom", fn=lambda c, r: None, np=2)


def test_unwritable_runs_root_is_a_clear_error(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        target = tmp_path / "file-not-folder"
        target.write_text("x")
        monkeypatch.setenv("SKIFF_RUNS", str(target / "runs"))
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        monkeypatch.setenv("SKIFF_RUNS", str(ro / "runs"))
    with pytest.raises(RunFolderError, match="cannot create run folder.*SKIFF_RUNS"):
        launch("demo")


def test_reattach_from_folder_and_list(runs_dir):
    job = launch("demo", {"steps": 2, "sleep": 0}).wait(10)
    again = Job.load(job.id)
    assert again is job  # the live object in this process
    fresh = Job(job.run_dir)
    assert fresh.status == "done" and fresh.result == job.result
    assert [j.id for j in list_jobs()] == [job.id]
    assert Job.load(job.id[-4:]) is job  # a unique suffix is enough


def test_running_job_whose_owner_died_is_marked_failed(runs_dir):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    # forge a job left 'running' by a kernel that no longer exists
    import json

    meta = json.loads((job.run_dir / "config.json").read_text())
    meta["owner"]["pid"] = 2**22 + 12345
    meta["id"] = "20000101-000000-demo-dead"
    dead = runs_dir / meta["id"]
    dead.mkdir()
    (dead / "config.json").write_text(json.dumps(meta))
    (dead / "events.jsonl").write_text('{"t":1,"type":"status","status":"running"}\n')
    lost = Job.load(dead)
    assert lost.status == "failed"
    assert "has exited" in lost.error


def test_null_reporter_is_inert(tmp_path):
    r = NullReporter()
    r.progress(1, 2)
    r.metric("x", 1.0)
    r.log("hi")
    assert r.should_stop() is False
    assert r.artifact("f", tmp_path / "f") == tmp_path / "f"


def test_run_reporter_throttles_progress_but_keeps_the_last(tmp_path):
    (tmp_path / "logs").mkdir()
    r = RunReporter(tmp_path, max_rate=5)
    for i in range(1, 1001):
        r.progress(i, 1000)
    from skiff.jobs.events import read_events

    events = [e for e in read_events(tmp_path / "events.jsonl") if e["type"] == "progress"]
    assert len(events) < 20
    assert events[-1]["done"] == 1000


def test_artifact_is_copied_into_the_run_folder(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    src = tmp_path / "plot.png"
    src.write_bytes(b"\x89PNG fake")
    r = RunReporter(run)
    kept = r.artifact("plot", src, kind="image")
    assert kept == run / "artifacts" / "plot.png" and kept.read_bytes() == b"\x89PNG fake"

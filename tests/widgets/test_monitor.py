"""JobMonitor: the live table of every job in the run folders."""

from __future__ import annotations

import re
import time

import pytest

from skiff.jobs import launch
from skiff.widgets.job_view import JobView
from skiff.widgets.monitor import JobMonitor, folder_listing, job_memory, resume_job


def _status(row) -> str:
    return re.search(r">(\w+)</span>", row.status.value).group(1)


def _until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.02)


def test_rows_show_each_job_newest_first(runs_dir):
    def with_memory(config, reporter):
        reporter.info(device="cpu", memory=3 * 2**20)
        reporter.progress(2, 4)
        return {}

    done = launch("demo", {"steps": 4, "sleep": 0.0}).wait(10)
    time.sleep(0.01)
    failed = launch("demo", {"steps": 4, "sleep": 0.0, "fail_at": 2}).wait(10)
    mem = launch("mem", fn=with_memory).wait(10)
    running = launch("demo", {"steps": 10_000, "sleep": 0.01})
    try:
        _until(lambda: running.state.done > 0)
        mon = JobMonitor(start=False)
        ids = list(mon.rows)
        assert set(ids) == {done.id, failed.id, mem.id, running.id}
        # newest first in the table: the first row's id cell is the newest job
        first_id_cell = mon.table.children[len(mon._head)]
        assert running.id in first_id_cell.value
        assert _status(mon.rows[done.id]) == "done"
        assert _status(mon.rows[failed.id]) == "failed"
        assert _status(mon.rows[running.id]) == "running"
        assert mon.rows[done.id].progress.value == mon.rows[done.id].progress.max == 4
        assert mon.rows[mem.id].memory.value == "3.0 MiB"
        assert mon.rows[mem.id].device.value == "cpu"
        assert mon.rows[mem.id].progress_text.value == "2/4"
        assert "4</b> jobs (1 running)" in mon.heading.value
        assert str(runs_dir) in mon.heading.value
        # only train, solve and ocr jobs can be resumed
        assert mon.rows[done.id].resume.layout.display == "none"
        # per-row cancel
        mon.rows[running.id].cancel.click()
        running.wait(10)
        mon.refresh()
        assert _status(mon.rows[running.id]) == "cancelled"
        assert mon.rows[running.id].cancel.disabled
    finally:
        running.cancel()
        running.wait(10)


def test_show_and_folder_buttons(runs_dir):
    job = launch("demo", {"steps": 3, "sleep": 0.0}).wait(10)
    mon = JobMonitor(start=False)
    mon.rows[job.id].show.click()
    (view,) = mon.detail.children
    assert isinstance(view, JobView) and view.job.id == job.id
    assert "skiff-done" in view.badge.value
    mon.rows[job.id].folder.click()
    listing = mon.detail.children[0].value
    assert str(job.run_dir) in listing
    for name in ("config.json", "events.jsonl", "result.json"):
        assert name in listing
    assert folder_listing(job.run_dir).count("<tr>") == sum(
        1 for p in job.run_dir.rglob("*") if p.is_file())


def test_monitor_thread_picks_up_new_jobs():
    mon = JobMonitor(poll=0.05)
    try:
        assert not mon.rows and "<b>0</b> jobs" in mon.heading.value
        job = launch("demo", {"steps": 5, "sleep": 0.01})
        _until(lambda: job.id in mon.rows)
        job.wait(10)
        _until(lambda: _status(mon.rows[job.id]) == "done")
        assert mon.rows[job.id].progress.value == 5
    finally:
        mon.close()


def test_limit_keeps_the_newest():
    jobs = [launch("demo", {"steps": 1, "sleep": 0.0}).wait(10) for _ in range(3)]
    mon = JobMonitor(limit=2, start=False)
    assert set(mon.rows) == {jobs[1].id, jobs[2].id}
    with pytest.raises(ValueError, match="got 0"):
        JobMonitor(limit=0, start=False)


def test_memory_from_the_trainer_fields():
    def predicted(config, reporter):
        reporter.info(predicted_vs_measured={"peak_memory_bytes": {"predicted": 1,
                                                                   "measured": 2 * 2**30}})
        return {}

    def in_result(config, reporter):
        return {"peak_memory_bytes": 3 * 2**20}

    assert job_memory(launch("a", fn=predicted).wait(10)) == "2.0 GiB"
    assert job_memory(launch("b", fn=in_result).wait(10)) == "3.0 MiB"
    assert job_memory(launch("c", fn=lambda c, r: {}).wait(10)) == ""


def test_memory_from_a_metric():
    def mem_metric(config, reporter):
        reporter.metric("gpu_mem", 5e9, step=1)
        return {}

    job = launch("m", fn=mem_metric).wait(10)
    assert job_memory(job) == "4.7 GiB"


def test_resume_relaunches_a_train_job_from_its_checkpoints():
    from skiff.kinds.train import to_config

    config = to_config({"model": "mlp", "steps": 2})

    def fake_train(cfg, reporter):
        (reporter.run_dir / "checkpoints").mkdir()
        return {}

    old = launch("train", config, fn=fake_train).wait(10)
    mon = JobMonitor(start=False)
    row = mon.rows[old.id]
    assert row.resume.layout.display != "none" and not row.resume.disabled
    new = mon.resume(old)
    assert new is not None and new.id != old.id
    try:
        assert new.kind == "train"
        assert new.config["resume"] is True
        assert new.config["checkpoint_dir"] == str(old.run_dir / "checkpoints")
        assert new.config["model"] == "mlp" and new.config["steps"] == 2
        assert new.meta["np"] == old.meta["np"]
        assert f"resumed {old.id} as {new.id}" in mon.message.value
        assert new.id in mon.rows  # the table shows the new job at once
        # the button records the notebook's line, which resumes the same job when typed
        assert new.meta["command"] == f"%jobs resume {old.id}"
    finally:
        new.cancel()
        new.wait(60)


def test_resume_refuses_other_kinds():
    job = launch("demo", {"steps": 1, "sleep": 0.0}).wait(10)
    with pytest.raises(ValueError, match="only train, solve and ocr jobs"):
        resume_job(job)
    mon = JobMonitor(start=False)
    assert mon.resume(job) is None
    assert "only train, solve and ocr jobs" in mon.message.value

"""Readers never write into a job they do not run; a cut last line is terminated before an
append; a job with a result is never relabelled failed (issue 15, item 5)."""

from __future__ import annotations

import json
import os
import warnings

from skiff.cli import main
from skiff.jobs import EventWriter, Job, launch, read_events
from skiff.jobs.events import CorruptEventWarning

DEAD_PID = 2**22 + 12345  # above the default pid_max: never a live process


def _orphan(job, runs_dir, name, events: bytes):
    """A copy of ``job``'s folder whose kernel is gone, with these events."""
    folder = runs_dir / name
    folder.mkdir()
    meta = json.loads((job.run_dir / "config.json").read_text())
    meta["owner"]["pid"] = DEAD_PID
    meta["id"] = name
    (folder / "config.json").write_text(json.dumps(meta))
    (folder / "events.jsonl").write_bytes(events)
    return folder


def test_truncated_log_of_a_finished_job_is_done_and_left_untouched(runs_dir, capsys):
    job = launch("demo", {"steps": 2, "sleep": 0}).wait(10)
    events = (job.run_dir / "events.jsonl").read_bytes()
    folder = _orphan(job, runs_dir, "20000101-000000-demo-trunc", events[:-40])  # truncate -40
    (folder / "result.json").write_text((job.run_dir / "result.json").read_text())
    before = (folder / "events.jsonl").read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CorruptEventWarning)
        for _ in range(2):  # the second listing must not see anything the first wrote
            assert main(["jobs"]) == 0
            line = next(r for r in capsys.readouterr().out.splitlines()
                        if r.startswith(folder.name))
            assert " done " in f"{line} ", line
        loaded = Job.load(folder)
    assert loaded.status == "done" and loaded.error is None
    assert "result.json is there" in loaded.state.inferred
    assert (folder / "events.jsonl").read_bytes() == before  # nothing written by a reader


def test_running_job_whose_kernel_died_is_shown_failed_without_a_write(runs_dir):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    events = b'{"t":1,"type":"status","status":"queued","rank":-1}\n' \
             b'{"t":2,"type":"status","status":"running","rank":0}\n'
    folder = _orphan(job, runs_dir, "20000101-000000-demo-lost", events)
    lost = Job.load(folder)
    assert lost.status == "failed" and "has exited" in lost.error
    assert (folder / "events.jsonl").read_bytes() == events
    assert Job(folder).status == "running"  # a fresh reader infers again: the file says so


def test_writer_terminates_a_cut_line_before_appending(tmp_path):
    path = tmp_path / "events.jsonl"
    whole = b'{"t":1,"type":"status","status":"running","rank":0}\n'
    path.write_bytes(whole + b'{"t":2,"type":"metric","na')  # a line cut by a crash
    EventWriter(path, rank=-1).write("status", status="cancelled", message="asked")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        events = read_events(path)
    assert [e.get("status") for e in events] == ["running", "cancelled"]
    assert len(caught) == 1 and issubclass(caught[0].category, CorruptEventWarning)
    assert path.read_bytes().endswith(b'"message":"asked"}\n')


def test_the_owner_still_writes_its_own_events(runs_dir):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    assert job.meta["owner"]["pid"] == os.getpid()
    statuses = [e["status"] for e in job.events() if e["type"] == "status"]
    assert statuses == ["queued", "running", "done"]


def test_a_process_job_whose_launcher_has_not_written_process_json_is_starting_not_lost():
    """A reader (the Jobs sidebar, `skiff jobs`) can look between the folder's creation and the
    launcher's process.json: that job is starting, not failed."""
    from skiff.jobs import Job

    job = Job.create("demo", {"steps": 1, "sleep": 0}, target="skiff.kinds.demo:run",
                     runner="process", np=2)
    seen = Job.load(job.run_dir)
    assert not seen.refresh().final and seen.status == "queued"

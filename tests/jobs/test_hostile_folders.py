"""A crafted run folder is shown, never obeyed (issue 15, item 6): every value escaped in
HTML and in the terminal, and no signal to a process that is not the job's own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from skiff.cli import main
from skiff.jobs import Job, launch
from skiff.jobs.render import JobTable, describe, job_html, jobs_table_html, plain
from skiff.jobs.signals import NotJobProcess, process_identity
from skiff.jobs.trust import sign_record

XSS = "<img src=x onerror=alert(1)>"
ANSI = "\x1b[2J\x1b]0;owned\x07"


def _crafted(job, runs_dir, name, **fields):
    folder = runs_dir / name
    folder.mkdir()
    meta = json.loads((job.run_dir / "config.json").read_text()) | {"id": name, **fields}
    (folder / "config.json").write_text(json.dumps(meta))
    return folder


def test_kind_label_id_and_messages_are_escaped_in_html(runs_dir):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    folder = _crafted(job, runs_dir, "20000101-000000-x", kind=XSS, label=XSS)
    (folder / "events.jsonl").write_text("\n".join(json.dumps(e) for e in [
        {"t": 1, "type": "status", "status": "running"},
        {"t": 2, "type": "metric", "name": XSS, "value": 1.0},
        {"t": 3, "type": "error", "message": XSS, "traceback": XSS},
        {"t": 4, "type": "status", "status": "failed", "message": XSS},
        {"t": 5, "type": "status", "status": XSS}]) + "\n")
    evil = Job.load(folder)
    from skiff.widgets.monitor import JobMonitor

    mon = JobMonitor(start=False)
    row = mon.rows[evil.id]
    shown = [job_html(evil), jobs_table_html([evil]), row.kind.value, row.status.value]
    for text in shown:
        assert "<img" not in text, text
    assert "&lt;img src=x onerror=alert(1)&gt;" in job_html(evil)
    mon.close()


def test_control_characters_never_reach_the_terminal(runs_dir, capsys):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    folder = _crafted(job, runs_dir, "20000101-000000-y", kind=f"demo{ANSI}")
    (folder / "events.jsonl").write_text(json.dumps(
        {"t": 1, "type": "status", "status": "failed", "message": f"bad{ANSI}"}) + "\n")
    (folder / "result.json").write_text(json.dumps({"note": ANSI}))
    evil = Job.load(folder)
    for text in (repr(JobTable([evil])), describe(evil)):
        assert "\x1b" not in text and "\x07" not in text
        assert "\\x1b[2J" in text
    assert main(["jobs"]) == 0 and main(["jobs", "cancel", folder.name]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b" in out
    assert plain("a\u202eb\tc\nd") == "a\\u202eb\tc\nd"


@pytest.fixture
def stranger():
    """Someone else's process, leading its own process group."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)
    yield proc
    proc.kill()
    proc.wait(10)


def _running_process_job(job, runs_dir, name, process: dict):
    folder = _crafted(job, runs_dir, name, runner="process")
    (folder / "events.jsonl").write_text(json.dumps(
        {"t": time.time(), "type": "status", "status": "running", "rank": 0}) + "\n")
    (folder / "process.json").write_text(json.dumps(process))
    return folder


def test_cancel_refuses_to_signal_a_pid_the_folder_merely_names(runs_dir, stranger):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    # the stranger's true start time and command line, but not signed with this user's key
    forged = {"pid": stranger.pid, "pgid": stranger.pid, **process_identity(stranger.pid)}
    folder = _running_process_job(job, runs_dir, "20000101-000000-forged", forged)
    target = Job.load(folder)
    with pytest.raises(NotJobProcess, match="not signed"):
        target.cancel(grace=0.1)
    time.sleep(0.5)
    assert stranger.poll() is None  # still alive
    assert (folder / "cancel").exists()


def test_cancel_refuses_a_reused_pid(runs_dir, stranger):
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    ident = process_identity(stranger.pid)
    reused = sign_record({"pid": stranger.pid, "pgid": stranger.pid, "cmd": ident["cmdline"],
                          "start_ticks": ident["start_ticks"] - 100,
                          "cmdline": ident["cmdline"]}, "process")
    folder = _running_process_job(job, runs_dir, "20000101-000000-reused", reused)
    target = Job(folder)
    with pytest.raises(NotJobProcess, match="started at another time"):
        target.cancel(grace=0.1)
    time.sleep(0.5)
    assert stranger.poll() is None


def test_cancel_signals_the_jobs_own_launcher_after_the_grace(runs_dir, stranger):
    """The genuine case, reattached from another process: signed, same start time."""
    job = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    ident = process_identity(stranger.pid)
    own = sign_record({"pid": stranger.pid, "pgid": stranger.pid, "cmd": ident["cmdline"],
                       "started": time.time(), **ident}, "process")
    folder = _running_process_job(job, runs_dir, "20000101-000000-own", own)
    target = Job.load(folder)
    target.cancel(grace=0.2)
    assert stranger.wait(20) == -signal.SIGTERM
    target.wait(20)
    assert target.status == "cancelled"


def test_process_json_records_the_launchers_identity(runs_dir):
    from skiff.jobs.process import find_mpiexec
    from skiff.jobs.trust import record_verdict

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    job = launch("demo", {"steps": 1, "sleep": 0}, np=1, runner="process").wait(60)
    assert job.status == "done", job.error
    proc = json.loads((job.run_dir / "process.json").read_text())
    assert isinstance(proc["start_ticks"], int) and proc["cmdline"][-1] == str(job.run_dir)
    assert record_verdict(proc, "process") == "trusted"
    assert os.path.basename(proc["cmdline"][0]).startswith(("mpiexec", "mpirun"))


def test_artifact_paths_outside_the_run_folder_are_ignored():
    from skiff.jobs import JobState

    state = JobState()
    for path in ("/etc/passwd", "../other/plot.png", "a/../../x.png", "C:\\x.png", "", 3,
                 "artifacts/loss.png"):
        state.apply({"t": 1, "type": "artifact", "name": "x", "path": path, "kind": "image"})
    assert [a["path"] for a in state.artifacts] == ["artifacts/loss.png"]


def test_a_kind_never_makes_a_strange_folder_name(runs_dir):
    job = launch(f"../demo{ANSI}", {}, fn=lambda config, reporter: {}).wait(10)
    assert job.run_dir.parent == runs_dir
    assert job.id.split("-")[2:-1] == ["demo", "2J", "0", "owned"]

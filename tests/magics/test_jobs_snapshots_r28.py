"""Round 28: ``%jobs`` read every metric line of every run to list them (50 trainings of
20,000 steps: seconds). Its list now holds snapshots without metrics, which read them once
asked: ``job.metrics``, ``job.plot()`` and a job view give what the full load gives. The
oracle: the metric events in the file, and the full load's summaries."""

from __future__ import annotations

import json
import shutil

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job, read_events, submit


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_a_listed_snapshot_reads_its_metrics_once_asked(shell, runs_dir):
    train, _ = submit("train", "mlp --steps 30")
    assert train.wait(120).status == "done"
    folder = runs_dir / "20000101-000000-train-elsewhere"  # a job this kernel did not run
    shutil.copytree(train.run_dir, folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["id"] = folder.name
    meta.pop("name", None)
    (folder / "config.json").write_text(json.dumps(meta))
    shell.run_line_magic("jobs", "list --all -o listed_r28")
    listed = shell.user_ns["listed_r28"]
    snap = next(j for j in listed if j.id == folder.name)
    full = Job.load(folder)
    assert not snap.metrics_read  # the list read no metric line: each one's last point, kept
    assert snap.refresh().metrics == {k: v[-1:] for k, v in full.state.metrics.items()}
    shown = next(j for j in shell.run_line_magic("jobs", "list --all") if j.id == folder.name)
    assert shown._repr_html_() == full._repr_html_() and "loss=" in full._repr_html_()
    drop = {"elapsed_s"}
    assert ({k: v for k, v in snap.summary().items() if k not in drop}
            == {k: v for k, v in full.summary().items() if k not in drop})
    written = {}
    for e in read_events(folder / "events.jsonl"):
        if e["type"] == "metric":
            written.setdefault(e["name"], []).append((e["step"], e["value"]))
    assert snap.metrics == written and written["loss"]  # read once asked
    assert snap.metrics_read and snap.plot("loss") is not None
    assert snap.summary()["status"] == "done"
    # a job view of a snapshot draws its charts (the full load's metrics)
    from skiff.widgets.job_view import JobView
    from tests.widgets.test_job_view import _wait_view

    view = JobView(Job.load(folder, metrics=False), poll=0.05)
    _wait_view(view)
    assert view.chart_draws >= 1 and view.job.state.metrics == full.state.metrics


def test_waiting_on_a_listed_running_job_ends_when_its_owner_dies(shell, runs_dir):
    """A snapshot is not followed; waited for, it is (as a loaded job): its owner gone
    without a final event, the wait ends with the job shown failed, not for ever."""
    import subprocess
    import sys

    from skiff.jobs import launch

    done = launch("demo", {"steps": 2, "sleep": 0}).wait(30)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folder = runs_dir / "20000101-000000-demo-owned"
        folder.mkdir()
        meta = json.loads((done.run_dir / "config.json").read_text())
        meta.update(id=folder.name, name=None, owner={"pid": owner.pid, "host": "here"})
        (folder / "config.json").write_text(json.dumps(meta))
        events = (done.run_dir / "events.jsonl").read_bytes().splitlines(keepends=True)
        (folder / "events.jsonl").write_bytes(b"".join(events[:2]))  # queued, running
        shell.run_line_magic("jobs", "list --all -o listed_owned")
        snap = next(j for j in shell.user_ns["listed_owned"] if j.id == folder.name)
        assert snap.status == "running" and not snap.metrics_read
        owner.kill()
        owner.wait(10)
        assert snap.wait(30).status == "failed"
        assert "has exited" in snap.error and str(owner.pid) in snap.error
    finally:
        owner.kill()
        owner.wait(10)

"""Round 27: ``python -m skiff jobs`` folded every event of every job, metrics included,
though it shows none: a 20,000-step training's 100,000 metric lines cost 1-2 s of each
listing. The terminal's listing now passes metric lines over unread (``Job.load(...,
metrics=False)``). The oracle: the full fold of the same folders, summary by summary, and
the events file itself for what a later full load reads."""

from __future__ import annotations

import json
import shutil

from skiff.cli import main
from skiff.jobs import Job, jobs_action, launch, read_events, submit


def _elsewhere(job, runs_dir, name):
    """A copy of ``job``'s folder under another id: a job this process did not run (those it
    runs are its live objects, which every load returns)."""
    folder = runs_dir / f"20000101-000000-{name}"
    shutil.copytree(job.run_dir, folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["id"] = folder.name
    meta.pop("name", None)
    (folder / "config.json").write_text(json.dumps(meta))
    return folder


def _summaries(jobs):
    out = [j.summary() for j in jobs]
    for doc in out:
        doc.pop("elapsed_s")  # a running job's grows between two reads
    return out


def test_a_listing_without_metrics_says_what_the_full_one_says(capsys, runs_dir):
    train, _ = submit("train", "mlp --steps 40")
    train.wait(120)
    failed = launch("demo", {"steps": 3, "sleep": 0, "fail_at": 2}).wait(30)
    assert train.status == "done" and failed.status == "failed"
    _elsewhere(train, runs_dir, "train-copy")
    _elsewhere(failed, runs_dir, "demo-copy")
    full = jobs_action("list", all=True)
    light = jobs_action("list", all=True, metrics=False)
    assert _summaries(light) == _summaries(full)
    copies = [j for j in light if j.id.startswith("20000101")]
    # no metric line read: each metric's last point, kept in folded.json (round 28)
    full_copies = {j.id: j for j in full if j.id.startswith("20000101")}
    assert len(copies) == 2 and all(
        j.state.metrics == {k: v[-1:] for k, v in full_copies[j.id].state.metrics.items()}
        for j in copies)
    assert any(len(s) > 1 for j in full_copies.values() for s in j.state.metrics.values())
    assert main(["jobs", "--json", "--all"]) == 0
    printed = json.loads(capsys.readouterr().out)
    for doc in printed:
        doc.pop("elapsed_s")
    assert printed == _summaries(full)


def test_a_snapshot_is_not_the_job_a_later_load_returns(runs_dir):
    train, _ = submit("train", "mlp --steps 20")
    train.wait(120)
    folder = _elsewhere(train, runs_dir, "train-snap")
    light = Job.load(folder, metrics=False)
    assert all(len(s) == 1 for s in light.state.metrics.values()) and light.status == "done"
    again = Job.load(folder.name)
    written = [e for e in read_events(folder / "events.jsonl") if e["type"] == "metric"]
    assert sum(len(series) for series in again.state.metrics.values()) == len(written) > 0

"""Round 28: ``python -m skiff jobs`` still read every byte of every run's events (passing
metric lines over, 50 runs of 20,000 steps: 3.5 s of a listing). The writer of a final
status now keeps the fold without metrics in ``folded.json`` (the bytes it folded and their
last 64), and a listing folds only what came after. The oracle: the full fold of every
event (``metrics=True``, the checkpoint not read), summary by summary."""

from __future__ import annotations

import json
import shutil

from skiff.cli import main
from skiff.jobs import EventWriter, Job, jobs_action, launch, read_events, submit
from skiff.jobs.folded import FOLDED, resume_fold


def _elsewhere(job, runs_dir, name):
    """A copy of ``job``'s folder under another id (not this process' live object)."""
    folder = runs_dir / f"20000101-000000-{name}"
    shutil.copytree(job.run_dir, folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["id"] = folder.name
    meta.pop("name", None)
    (folder / "config.json").write_text(json.dumps(meta))
    return folder


def _lasts(metrics):
    return {name: series[-1:] for name, series in metrics.items()}


def _summaries(jobs):
    return {j.id: {k: v for k, v in j.summary().items() if k != "elapsed_s"} for j in jobs
            if j.id.startswith("20000101")}


def _listed_as_full_fold(capsys):
    light = _summaries(jobs_action("list", all=True, metrics=False))
    full = _summaries(jobs_action("list", all=True))  # every event, no checkpoint read
    assert light == full and light
    assert main(["jobs", "--json", "--all"]) == 0
    printed = {d["id"]: {k: v for k, v in d.items() if k != "elapsed_s"}
               for d in json.loads(capsys.readouterr().out) if d["id"].startswith("20000101")}
    assert printed == full
    return full


def test_a_listing_reads_the_checkpoint_and_shows_what_the_full_fold_shows(runs_dir, capsys):
    train, _ = submit("train", "mlp --steps 60")
    failed = launch("demo", {"steps": 3, "sleep": 0, "fail_at": 2})
    assert train.wait(120).status == "done" and failed.wait(30).status == "failed"
    folders = [_elsewhere(train, runs_dir, "train-copy"), _elsewhere(failed, runs_dir, "demo")]
    for folder in folders:  # the checkpoint covers the whole log: nothing else is read
        size = (folder / "events.jsonl").stat().st_size
        state, end, _lines = resume_fold(folder)
        full = Job.load(folder).state.metrics  # each metric's last point, in its order
        assert end == size and state.final and state.metrics == _lasts(full)
        assert list(state.metrics) == list(full)
        light = Job.load(folder, metrics=False)
        assert light._reader.offset == size and light.refresh().status == state.status
    full = _listed_as_full_fold(capsys)
    assert full[folders[1].name]["error"] and full[folders[0].name]["progress"] == 1.0


def test_what_came_after_the_checkpoint_is_folded_and_a_changed_log_is_read_in_full(
        runs_dir, capsys):
    done = launch("demo", {"steps": 4, "sleep": 0}).wait(30)
    late = _elsewhere(done, runs_dir, "late")
    cut = _elsewhere(done, runs_dir, "cut")
    damaged = _elsewhere(done, runs_dir, "damaged")
    rewritten = _elsewhere(done, runs_dir, "rewritten")
    # after the checkpoint: an error, then a failure, appended as another process writes
    # them (raw lines: EventWriter would make a new checkpoint)
    with open(late / "events.jsonl", "ab") as fh:
        fh.write(b'{"t":1.0,"type":"error","rank":1,"message":"late failure"}\n'
                 b'{"t":2.0,"type":"status","rank":-1,"status":"failed","message":"x"}\n')
    events = (cut / "events.jsonl").read_bytes()
    (cut / "events.jsonl").write_bytes(events[: events.rindex(b'{"t"')])  # no final status
    (damaged / FOLDED).write_text('{"version": 1, "bytes": "lots"}')
    # the same size, other bytes at the end: the checkpoint is of another log
    lines = (rewritten / "events.jsonl").read_bytes().splitlines(keepends=True)
    last = lines[-1].replace(b'"done"', b'"fail"')
    (rewritten / "events.jsonl").write_bytes(b"".join(lines[:-1]) + last)
    assert resume_fold(late) is not None
    assert resume_fold(cut) is resume_fold(damaged) is resume_fold(rewritten) is None
    full = _listed_as_full_fold(capsys)
    assert full[late.name]["status"] == "failed" and "late failure" in full[late.name]["error"]
    assert full[cut.name]["status"] != "queued"


def test_a_final_status_written_again_makes_a_new_checkpoint(runs_dir):
    done = launch("demo", {"steps": 2, "sleep": 0}).wait(30)
    folder = _elsewhere(done, runs_dir, "again")
    before = resume_fold(folder)[1]
    EventWriter(folder / "events.jsonl", rank=-1).write("status", status="failed",
                                                      message="watcher: lost")
    state, end, _lines = resume_fold(folder)
    assert end == (folder / "events.jsonl").stat().st_size > before
    assert state.status == Job.load(folder).refresh().status == "failed"


def test_a_checkpoint_that_fails_never_fails_the_final_status(tmp_path, monkeypatch):
    import skiff.jobs.events as events

    def broken(run_dir):
        raise RuntimeError("a bug in a hook")

    monkeypatch.setattr(events, "AFTER_FINAL", [broken])
    EventWriter(tmp_path / "events.jsonl", rank=0).write("status", status="done")
    assert [e["status"] for e in read_events(tmp_path / "events.jsonl")] == ["done"]

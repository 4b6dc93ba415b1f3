"""Round 28: ``jobs show ID`` and ``jobs logs ID`` of a finished training read every metric
line of its events (a 20,000-step training's 100,000: 1-2 s) though they print none; they
now read the fold kept in ``folded.json`` and the log lines only. The oracle: what the same
commands print from the full load (every event read, as before round 28)."""

from __future__ import annotations

import json
import shutil

import skiff.jobs as jobs_module
from skiff.cli import main
from skiff.jobs import Job, read_events, submit
from skiff.jobs.render import log_records


def _printed(capsys, *args):
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_show_and_logs_of_a_finished_job_print_what_the_full_load_prints(
        runs_dir, capsys, monkeypatch):
    train, _ = submit("train", "mlp --steps 40")
    assert train.wait(120).status == "done"
    folder = runs_dir / "20000101-000000-train-shown"  # not this process' live job
    shutil.copytree(train.run_dir, folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["id"] = folder.name
    meta.pop("name", None)
    (folder / "config.json").write_text(json.dumps(meta))
    commands = [("jobs", "show", folder.name), ("jobs", "show", folder.name, "--json"),
                ("jobs", "logs", folder.name), ("jobs", "logs", folder.name, "--json")]
    loaded = []
    real = jobs_module.jobs_action

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        loaded.append(getattr(out, "metrics_read", None))
        return out

    monkeypatch.setattr(jobs_module, "jobs_action", spy)
    light = [_printed(capsys, *c) for c in commands]
    assert loaded == [False] * 4  # snapshots: no metric line read
    monkeypatch.setattr(jobs_module, "jobs_action",
                        lambda *a, **k: real(*a, **{**k, "metrics": True}))
    full = [_printed(capsys, *c) for c in commands]
    assert json.loads(light[1]) == json.loads(full[1]) and "options" in json.loads(full[1])
    assert light[0] == full[0] and light[2] == full[2] and light[3] == full[3]
    want = [e["message"] for e in read_events(folder / "events.jsonl")
            if e["type"] in ("log", "error")]
    assert [r["message"] for r in log_records(Job.load(folder))] == want and want

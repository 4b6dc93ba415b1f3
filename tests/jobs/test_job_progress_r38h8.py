"""Round 38 (h8): ``job.progress`` (the fraction done, as ``jobs ls --json`` and ``summary()``
give it) was an AttributeError beside ``job.status`` in a notebook. The oracle: the steps the
demo job reported, read back from its events file, over its total."""

from __future__ import annotations

import json
import time

from skiff.jobs import launch
from skiff.jobs.job import DamagedJob, Job


def _progress_events(job) -> list[dict]:
    lines = (job.run_dir / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("type") == "progress"]


def test_progress_while_held_and_when_done(runs_dir, tmp_path):
    hold = tmp_path / "go"
    job = launch("demo", {"steps": 4, "sleep": 0.0, "hold_at": 3, "hold_until": str(hold)})
    deadline = time.monotonic() + 60
    while not any("holding until" in m for _t, _l, m in job.state.logs):
        assert time.monotonic() < deadline and not job.done, job.error
        time.sleep(0.05)
    last = _progress_events(job)[-1]
    assert (last["done"], last["total"]) == (2, 4)
    assert job.progress == 0.5 == job.summary()["progress"]
    assert Job.load(job.id).progress == 0.5   # a reader of the run folder alone
    hold.write_text("")
    assert job.wait(60).status == "done", job.error
    assert job.progress == 1.0 == job.summary()["progress"]


def test_no_total_no_progress(tmp_path):
    damaged = DamagedJob(tmp_path / "x", "no config.json")
    assert damaged.progress is None is damaged.summary()["progress"]

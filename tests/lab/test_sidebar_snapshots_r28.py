"""Round 28: the Jobs sidebar's first list read every metric line of every run (50
trainings of 20,000 steps: 30 s on a loaded machine before the server answered). A finished
job is now listed from its folded.json (its fold and each metric's last point) and its
series read once its view is asked for. The oracle: the rows and the view made from the full
load of the same folders (every event read)."""

from __future__ import annotations

import json
import shutil

from skiff.jobs import Job, launch, submit
from skiff.lab.payload import JobCache, job_detail, job_row


def _copy(job, root, name):
    folder = root / f"20000101-000000-{name}"
    shutil.copytree(job.run_dir, folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["id"] = folder.name
    meta.pop("name", None)
    (folder / "config.json").write_text(json.dumps(meta))
    return folder


def test_sidebar_rows_and_views_of_snapshots_are_those_of_the_full_load(runs_dir):
    train, _ = submit("train", "mlp --steps 40")
    failed = launch("demo", {"steps": 3, "sleep": 0, "fail_at": 2})
    assert train.wait(120).status == "done" and failed.wait(30).status == "failed"
    folders = [_copy(train, runs_dir, "train"), _copy(failed, runs_dir, "demo")]
    old = _copy(train, runs_dir, "older")  # no checkpoint: an older skiff's folder
    (old / "folded.json").unlink()
    cache = JobCache(runs_dir)
    listed = {j.id: j for j in cache.jobs()}
    now = 1.0e10
    for folder in [*folders, old]:
        snap, full = listed[folder.name], Job.load(folder)
        assert job_row(snap, now) == job_row(full, now)
        assert snap.metrics_read is (folder == old)  # the snapshots read no metric line
    assert "loss" in job_row(listed[folders[0].name], now)["progress"]
    for folder in folders:
        detail, want = job_detail(listed[folder.name], now), job_detail(Job.load(folder), now)
        assert detail == want and detail["metrics"]
    assert job_detail(listed[folders[0].name], now)["metrics"]["loss"]["count"] == 40

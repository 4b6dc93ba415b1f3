"""A job view's ETA counts down between progress events (round 46 h11).

A job held between two events (a notebook reloaded mid-job, a slow step) showed the ETA of
its last event unchanged: 'ETA 0.7 s' for as long as it was held. The run folder here says
1 step a second, 10 of 40 done, the last 3 s ago: 30 s left at that event, so 27 s now, and
25 s two seconds later (the view's own tick, without a new event). The clock is the
view's, set by the test (no timing)."""

from __future__ import annotations

import json
import time
import types

from skiff.jobs import Job

T = 1_800_000_000.0  # the test's "now"


def test_the_eta_shown_counts_down_from_the_last_progress(runs_dir, monkeypatch):
    import skiff.widgets.job_view as jv

    job = Job.create("demo", {"steps": 40}, target="skiff.kinds.demo:run", runner="thread")
    events = [{"t": T - 20, "type": "status", "rank": -1, "status": "running"}]
    events += [{"t": T - 13 + i, "type": "progress", "rank": 0, "done": i, "total": 40,
                "unit": "step"} for i in range(11)]  # 1 step a second; the last 3 s ago
    with open(job.run_dir / "events.jsonl", "a") as fh:
        fh.write("".join(json.dumps(e) + "\n" for e in events))
    clock = types.SimpleNamespace(now=T)
    monkeypatch.setattr(jv, "time", types.SimpleNamespace(
        time=lambda: clock.now, monotonic=time.monotonic, sleep=time.sleep))
    view = jv.JobView(Job.load(job.run_dir), start=False)
    try:
        view.update(force=True)
        assert "ETA 27.0 s" in view.progress_text.value, view.progress_text.value
        clock.now = T + 2  # no new event: the view's tick counts it down
        view._eta_at -= jv.ETA_TICK_S
        view._last_update -= 1.0
        view.update()
        assert "ETA 25.0 s" in view.progress_text.value, view.progress_text.value
    finally:
        view.close()

"""Round 27: progress events are throttled to 10 a second (docs/events.md), but a metric
flushed the progress held back, so a training that logs a metric every step wrote a progress
event every step too (20,000 steps: 20,001 progress events beside 100,000 metrics, and every
listing folded them all). The oracle: the calls the loop made, against the events written."""

from __future__ import annotations

import time

from skiff.jobs.events import read_events
from skiff.jobs.reporter import RunReporter


def test_metrics_every_step_do_not_undo_the_progress_throttle(tmp_path):
    reporter = RunReporter(tmp_path)
    steps = 3000
    start = time.monotonic()
    for step in range(1, steps + 1):
        reporter.metric("loss", 1.0 / step, step=step)
        reporter.progress(step, steps)
    spent = time.monotonic() - start
    reporter.flush()
    events = read_events(tmp_path / "events.jsonl")
    progress = [e for e in events if e["type"] == "progress"]
    metrics = [e for e in events if e["type"] == "metric"]
    assert [m["step"] for m in metrics] == list(range(1, steps + 1))  # every metric kept
    assert progress[-1]["done"] == steps  # the last always written
    # at most 10 a second over the time the loop took (+ the first and the last)
    assert len(progress) <= 10 * spent + 2, (len(progress), spent)
    dones = [p["done"] for p in progress]
    assert dones == sorted(dones)


def test_a_slow_loop_writes_each_step(tmp_path):
    """Steps slower than the throttle's gap: every progress is written, in its step."""
    reporter = RunReporter(tmp_path, max_rate=1000.0)  # a 1 ms gap
    for step in range(1, 6):
        reporter.metric("loss", float(step), step=step)
        time.sleep(0.01)
        reporter.progress(step, 5)
    events = read_events(tmp_path / "events.jsonl")
    assert [e["done"] for e in events if e["type"] == "progress"] == [1, 2, 3, 4, 5]

"""What a live JobView costs the kernel, against a naive view that updates on every event.

    python benchmarks/bench_widgets.py

A thread job reports 400 steps (a metric each, progress as the reporter lets through) in ~3 s.
Two views watch it: the JobView (one watcher thread, updates batched with ``hold_sync`` and
throttled to 10 Hz, the chart redrawn at most 3 times a second) and a naive peer that copies
every event into the same widgets as it arrives and redraws the chart each time (one
comm message per changed trait). Each figure is the JobView's count or time as a ratio of the
peer's, measured in the same run. Messages are counted where ipywidgets hands them to the
comm (``Widget._send``), so no front end is needed. The JobView's CPU time counts the whole
process while the job runs (the job's own reporting included); the peer's only its updates.
"""

from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("SKIFF_RUNS", tempfile.mkdtemp(prefix="bench-widgets-"))
os.environ.setdefault("MPLBACKEND", "Agg")

STEPS = 400


def fast_job(config, reporter):
    for step in range(1, STEPS + 1):
        reporter.metric("loss", 1.0 / step, step=step)
        reporter.progress(step, STEPS)
        time.sleep(0.005)  # about 2-3 s in all: the view watches it live
    return {}


def count_sends(widget_tree) -> list:
    sent = []
    todo = [widget_tree]
    while todo:
        w = todo.pop()
        w._send = lambda msg, buffers=None, _s=sent: _s.append(msg)
        todo.extend(getattr(w, "children", ()))
    return sent


def run_jobview():
    from skiff.jobs import launch
    from skiff.widgets.job_view import JobView

    job = launch("bench", fn=fast_job)
    t0 = time.process_time()
    view = JobView(job, start=False)
    sent = count_sends(view)
    view.start()
    job.wait(120)
    if view._thread is not None:
        view._thread.join(30)
    cpu = time.process_time() - t0
    return len(sent), view.chart_draws, cpu


def run_naive():
    from skiff.jobs import launch
    from skiff.jobs.events import EventReader
    from skiff.widgets.chart import metric_chart
    from skiff.widgets.job_view import JobView

    job = launch("bench", fn=fast_job)
    job.wait(120)  # replay the same events one by one, as a per-event view would see them
    view = JobView(job, start=False)
    view.progress.value, view.progress.max = 0.0, 1.0
    sent = count_sends(view)
    t0 = time.process_time()
    metrics: dict = {}
    draws = 0
    for event in EventReader(job.run_dir / "events.jsonl").read():
        if event["type"] == "progress":
            view.progress.max = float(event["total"])
            view.progress.value = float(event["done"])
            view.progress_text.value = f"{event['done']}/{event['total']}"
        elif event["type"] == "metric":
            metrics.setdefault(event["name"], []).append((event["step"], event["value"], 0))
            png = metric_chart(metrics)
            if png is not None:
                view.chart.value = png
                draws += 1
    cpu = time.process_time() - t0
    return len(sent), draws, cpu


def main() -> None:
    msgs, draws, cpu = run_jobview()
    n_msgs, n_draws, n_cpu = run_naive()
    print(f"job: {STEPS} steps with a metric each, ~5 ms a step")
    print(f"comm messages: JobView {msgs}, per-event view {n_msgs}  ratio {msgs / n_msgs:.4f}")
    print(f"chart draws:   JobView {draws}, per-event view {n_draws}  "
          f"ratio {draws / max(n_draws, 1):.4f}")
    print(f"kernel CPU s:  JobView {cpu:.2f}, per-event view {n_cpu:.2f}  "
          f"ratio {cpu / n_cpu:.3f}")


if __name__ == "__main__":
    main()

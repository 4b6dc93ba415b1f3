"""Round 44 (h21), found by h10 in the tour: a 20-step ``%train mlp``'s job view drew ``lr``,
``samples_per_s`` and ``grad_norm`` from their sampled events (at most 10 a second: steps 1,
8, 19, 20), so the warm-up's peak (lr 0.001 at step 2, in ``result.json``'s history) was not
drawn and the lr looked like it peaked at step 8. A finished job's chart is drawn from the
result's whole history now. No timing: the run folder's events are written as the sampling
reporter left them, the result's history holds every step of an independent lr schedule."""

from __future__ import annotations

import json
import math

import pytest

from skiff.jobs import Job
from skiff.jobs.events import EventWriter
from skiff.jobs.series import with_history

STEPS, WARM, PEAK = 20, 2, 1e-3
SAMPLED = (1, 8, 19, 20)  # the steps whose lr the tour's events held (h10)


def _lr(step: int) -> float:
    """Linear warm-up over WARM steps, then cosine decay to 0: the peak is at step WARM."""
    if step <= WARM:
        return PEAK * step / WARM
    return PEAK * 0.5 * (1 + math.cos(math.pi * (step - WARM) / (STEPS - WARM)))


def _history():
    return [{"step": s, "loss": 1.4 - 0.02 * s, "lr": _lr(s), "epoch": s / 32,
             "samples_per_s": 1000.0 + s, "grad_norm": 1.0 / s} for s in range(1, STEPS + 1)]


def _run_folder(*, result=True, final=True):
    job = Job.create("train", {"model": "mlp", "steps": STEPS}, target="skiff.kinds.train:run",
                     runner="thread", label="%train mlp")
    w = EventWriter(job.run_dir / "events.jsonl", rank=0)
    w.write("status", status="running")
    for row in _history():  # as the trainer reports: every loss, the rest sampled
        w.write("metric", name="loss", value=row["loss"], step=row["step"])
        if row["step"] in SAMPLED:
            for name in ("lr", "samples_per_s", "grad_norm"):
                w.write("metric", name=name, value=row[name], step=row["step"])
    if result:
        (job.run_dir / "result.json").write_text(json.dumps({"steps": STEPS,
                                                             "history": _history()}))
    if final:
        w.write("status", status="done")
    return job


def _drawn(monkeypatch, job, *, draw=False):
    import skiff.widgets.job_view as jv

    drawn = []
    real = jv.metric_chart

    def spy(metrics, **kw):  # what the view hands the chart (drawn as always once: a PNG)
        drawn.append({k: list(v) for k, v in metrics.items()})
        return real(metrics, **kw) if draw else b"\x89PNG"

    monkeypatch.setattr(jv, "metric_chart", spy)
    view = jv.JobView(job, start=False)
    try:
        view.update(force=True)
    finally:
        view.close()
    assert drawn and view.chart_draws == 1 and bytes(view.chart.value[:4]) == b"\x89PNG"
    return drawn[-1]


def test_a_finished_jobs_chart_draws_the_lr_peak_at_step_2(runs_dir, monkeypatch):
    job = _run_folder()
    assert [s for s, _v in job.metrics["lr"]] == list(SAMPLED)  # the events are sampled
    drawn = _drawn(monkeypatch, job, draw=True)
    lr = drawn["lr"]
    assert [p[0] for p in lr] == list(range(1, STEPS + 1))
    top = max(lr, key=lambda p: p[1])
    assert top[0] == WARM and top[1] == pytest.approx(PEAK)
    for name in ("samples_per_s", "grad_norm"):
        assert [(p[0], p[1]) for p in drawn[name]] == [(r["step"], r[name]) for r in _history()]
    assert "epoch" not in drawn  # a history column that was no metric is no chart
    assert [p[1] for p in drawn["loss"]] == [r["loss"] for r in _history()]


def test_without_a_result_or_while_running_the_events_are_drawn(runs_dir, monkeypatch):
    for kw in ({"result": False}, {"final": False}):
        job = _run_folder(**kw)
        drawn = _drawn(monkeypatch, job)
        assert [p[0] for p in drawn["lr"]] == list(SAMPLED), kw
    job = _run_folder(result=False)
    (job.run_dir / "result.json").write_text("{not json")  # damaged: the events' points
    assert [p[0] for p in _drawn(monkeypatch, job)["lr"]] == list(SAMPLED)


def test_with_history_takes_only_more_points_of_known_names():
    events = {"lr": [(1, 0.5, 1.0), (4, 0.25, 2.0)], "val_loss": [(2, 3.0, 1.0)],
              "loss": [(s, 1.0, 0.0) for s in range(1, 6)]}
    result = {"history": [{"step": s, "lr": 1.0 / s, "loss": 2.0, "flag": True}
                          for s in range(1, 5)] + [{"step": "5", "lr": 9.0}, "junk"],
              "val_history": [{"step": 2, "val_loss": 3.0}, {"step": 4, "val_loss": 2.5}]}
    out = with_history(events, result)
    assert out["lr"] == [(s, 1.0 / s, None) for s in range(1, 5)]  # a text step left out
    assert out["val_loss"] == [(2, 3.0, None), (4, 2.5, None)]
    assert out["loss"] is events["loss"]  # the events held more: kept
    assert "flag" not in out and set(out) == set(events)
    assert with_history(events, None) is events and with_history(events, []) is events
    assert events["lr"] == [(1, 0.5, 1.0), (4, 0.25, 2.0)]  # the input is not changed

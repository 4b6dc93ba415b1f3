"""Round 28: the train kernel wrote five metric lines a step (loss, lr, samples_per_s,
grad_norm, memory_bytes: 529 KB of events per 1,000 steps), though a view draws the four
beside the loss as curves of at most 2,000 points. ``Reporter.sample`` is a metric a reporter
may thin: the run-folder reporter writes at most ten a second per name and always the
latest at flush (a run's end, a cancel) or with the last step's progress. The oracle: the
calls the loop made, against the events written; time is a fake clock, so that the test
says exactly which samples may be missing."""

from __future__ import annotations

import time
import types

import pytest

import skiff.jobs.reporter as reporter_module
from skiff.jobs import launch
from skiff.jobs.events import read_events
from skiff.jobs.reporter import JobCancelled, Reporter, RunReporter


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    fake = types.SimpleNamespace(monotonic=lambda: now[0], strftime=time.strftime)
    monkeypatch.setattr(reporter_module, "time", fake)
    return now


def _series(path, name):
    return [(e["step"], e["value"]) for e in read_events(path / "events.jsonl")
            if e["type"] == "metric" and e["name"] == name]


def test_samples_are_thinned_in_time_and_the_last_is_kept(tmp_path, clock):
    rep = RunReporter(tmp_path)  # ten a second
    rep.KEEP_FIRST = 0  # thinned from the first (a short job's first ones: round 44's test)
    steps, dt = 500, 0.013
    calls = []
    for step in range(1, steps + 1):
        clock[0] += dt
        rep.metric("loss", 1.0 / step, step=step)
        rep.sample("lr", 1e-3 * (1 + step % 3), step=step)
        calls.append((step, 1e-3 * (1 + step % 3), clock[0]))
        rep.progress(step, steps + 1)  # not finished: the last sample waits for flush
    held = _series(tmp_path, "lr")
    rep.flush()
    lr = _series(tmp_path, "lr")
    assert _series(tmp_path, "loss") == [(s, 1.0 / s) for s in range(1, steps + 1)]
    assert lr[-1] == calls[-1][:2] and held[-1] != calls[-1][:2]  # written at flush
    when = {s: t for s, _v, t in calls}
    assert lr[0] == calls[0][:2] and set(lr) <= {c[:2] for c in calls}
    written = [when[s] for s, _v in lr[:-1]]
    # round 45 (h8): windows of SPIKE_WINDOW tenths of a second, each written as its lowest,
    # highest and closing sample (a spike between samples is drawn): no more points than
    # ten a second; none missing for longer than a window and one step
    assert len(written) <= (written[-1] - written[0]) / 0.1 + 3
    window = 0.1 * rep.SPIKE_WINDOW
    assert all(b - a <= window + dt + 1e-9 for a, b in zip(written, written[1:]))
    assert len(lr) < steps / 5


def test_the_last_steps_samples_go_with_its_progress(tmp_path, clock):
    rep = RunReporter(tmp_path)
    rep.KEEP_FIRST = 0
    for step in range(1, 21):
        clock[0] += 0.001
        rep.sample("memory_bytes", 1000.0 + step, step=step)
        rep.progress(step, 20)
    assert _series(tmp_path, "memory_bytes") == [(1, 1001.0), (20, 1020.0)]


def test_a_short_jobs_samples_are_all_written(tmp_path, clock):
    # round 44 (h21): a 20-step training's lr was 2 points at 10 a second, its warm-up's
    # peak at step 2 missing from the live chart; the first KEEP_FIRST of a name are all kept
    rep = RunReporter(tmp_path)
    keep = rep.KEEP_FIRST

    def rate(s):  # a warm-up to step 2, then a decay
        return 1e-3 * s / 2 if s <= 2 else 2e-3 / s

    for step in range(1, keep + 51):
        clock[0] += 0.001
        rep.sample("lr", rate(step), step=step)
    lr = _series(tmp_path, "lr")
    assert lr[:keep] == [(s, rate(s)) for s in range(1, keep + 1)]
    assert max(lr, key=lambda p: p[1])[0] == 2
    assert len(lr) < keep + 5  # past them, thinned again (50 steps within 0.05 s)


def test_a_plain_reporter_keeps_every_sample():
    seen = []

    class Collect(Reporter):
        def metric(self, name, value, *, step=None):
            seen.append((name, value, step))

    rep = Collect()
    for step in range(1, 6):
        rep.sample("lr", 0.1 * step, step=step)
    assert seen == [("lr", 0.1 * s, s) for s in range(1, 6)]


def _sampling(config, reporter):
    for step in range(1, 2001):
        reporter.metric("loss", 1.0 / step, step=step)
        reporter.sample("samples_per_s", 100.0 + step, step=step)
    if config.get("cancel"):
        raise JobCancelled("cancelled by request")
    return {"steps": 2000}


@pytest.mark.parametrize("cancel", [False, True])
def test_a_jobs_last_sample_is_there_when_it_ends(runs_dir, cancel):
    job = launch("custom", {"cancel": cancel}, fn=_sampling).wait(30)
    assert job.status == ("cancelled" if cancel else "done")
    assert job.metrics["samples_per_s"][-1] == (2000, 2100.0)
    assert job.metrics["loss"] == [(s, 1.0 / s) for s in range(1, 2001)]

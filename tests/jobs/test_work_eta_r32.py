"""Round 32: an ETA weighted by work where the kernel reports it. An OCR job's units
(images) differ in size: a folder of 100 receipts (0.06 s each) then 20 scanned pages (3 s
each) said "ETA 1.2 s" at the last receipt with a minute ahead. With ``work`` and
``work_total`` on its progress (any measure of what each unit takes: pixels, pages of a
cost model), the ETA is the work left at the recent rate of work. The oracle: the true time
left of the stream the events were made from (a fake clock: no timing here)."""

from __future__ import annotations

import random

import pytest

from skiff.jobs import JobState
from skiff.jobs.events import read_events
from skiff.jobs.reporter import RunReporter
from skiff.jobs.terminal import shown_eta


def _stream(sizes, per_work=1.0, noise=0.0, weighted=True, seed=0):
    """One progress event per unit of ``sizes`` (its work; it takes ``per_work`` seconds a
    work unit, give or take ``noise``). Yields (event, true seconds left)."""
    rng = random.Random(seed)
    times = [w * per_work * (1 + rng.uniform(-noise, noise)) for w in sizes]
    t, total_work, work = 100.0, float(sum(sizes)), 0.0
    yield {"t": t, "type": "status", "status": "running"}, None
    for done, w in enumerate(sizes, 1):
        t += times[done - 1]
        work += w
        event = {"t": t, "type": "progress", "done": done, "total": len(sizes), "unit": "image"}
        if weighted:
            event.update(work=work, work_total=total_work)
        yield event, sum(times[done:])


RECEIPTS_THEN_PAGES = [0.06] * 100 + [3.0] * 20


def test_receipts_then_pages_the_eta_is_the_work_left():
    state, plain = JobState(), JobState()
    for (event, left), (bare, _) in zip(_stream(RECEIPTS_THEN_PAGES, noise=0.2),
                                        _stream(RECEIPTS_THEN_PAGES, noise=0.2,
                                                weighted=False)):
        state.apply(event)
        plain.apply(bare)
        if state.done == 100:  # the last receipt: 20 pages (60 s) ahead
            assert left == pytest.approx(60, rel=0.2)
            assert plain.eta() < left / 10  # units alone: "ETA 1.2 s"
            assert state.eta() == pytest.approx(left, rel=0.25)
            assert shown_eta(state) == state.eta()  # 6 s of progress: the gate lets it by
        if left and state.done >= 3 and shown_eta(state) is not None:
            assert state.eta() == pytest.approx(left, rel=0.3), (state.done, left)
    assert state.eta() == 0.0  # all done (the status event comes next)
    assert state.rate() is not None  # the rate shown stays in images a second


def test_without_work_or_with_a_damaged_one_the_units_are_used():
    sizes = [1.0] * 10
    for bad in ({"work": "x"}, {"work": 5.0}, {"work": 3.0, "work_total": -1},
                {"work": 9.0, "work_total": 4.0}, {"work": True, "work_total": 10.0},
                {"work": 1.0, "work_total": float("inf")}):
        state = JobState()
        for event, left in _stream(sizes, weighted=False):
            if event["type"] == "progress":
                event.update(bad)
            state.apply(event)
            if state.done == 5:
                assert state.work is None and state.work_total is None, bad
                assert state.eta() == pytest.approx(left), bad


def test_a_split_job_ignores_work():
    state = JobState(split=True)
    for event, _ in _stream([1.0] * 6):
        state.apply(event)
        if state.done == 3:
            assert state.eta() == pytest.approx(3.0)


def test_the_reporter_writes_work_and_the_state_reads_it(tmp_path):
    reporter = RunReporter(tmp_path, max_rate=1e9)
    reporter.progress(1, 4, unit="image", work=100, work_total=1000)
    reporter.progress(2, 4, unit="image")  # without: no work fields
    reporter.flush()
    progress = [e for e in read_events(tmp_path / "events.jsonl") if e["type"] == "progress"]
    assert (progress[0]["work"], progress[0]["work_total"]) == (100.0, 1000.0)
    assert "work" not in progress[1]
    state = JobState()
    state.apply(progress[0])
    assert (state.work, state.work_total) == (100.0, 1000.0)
    state.apply(progress[1])
    assert state.work is None

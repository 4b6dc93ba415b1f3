"""A job's first ETA is no guess from its first few quick units: an OCR job that read three
small images in 0.3 s said "ETA 3.2 s, 14.3 images/s" with 46 large pages ahead. The lines a
terminal shows (``live_line``, ``plain_line``) give no ETA until the progress spans a few
seconds (or the ETA reaches no further than twice the time measured), then one close to the
true time left of the stream the events were made from (a fake clock: no timing here)."""

from __future__ import annotations

import pytest

from skiff.jobs import JobState
from skiff.jobs.terminal import ETA_AFTER_S, live_line, plain_line, shown_eta


class _Job:
    def __init__(self, state):
        self.id, self.kind, self.state = "20260101-000000-ocr-abcd", "ocr", state


def _ocr_stream(small=3, pages=46, small_s=0.1, page_s=3.0, setup=10.0):
    """Events an OCR job writes: ``small`` quick images, then ``pages`` slow ones, one
    progress event per image. Yields (event, now, true seconds left)."""
    t = 100.0
    yield {"t": t, "type": "status", "status": "running"}, t, None
    t += setup
    total = small + pages
    times = [small_s] * small + [page_s] * pages
    for done in range(1, total + 1):
        t += times[done - 1]
        yield ({"t": t, "type": "progress", "done": done, "total": total, "unit": "image"},
               t, sum(times[done:]))


def test_no_eta_from_three_quick_images_then_one_near_the_truth():
    state, job = JobState(), None
    seen = []
    for event, now, left in _ocr_stream():
        state.apply(event)
        job = _Job(state)
        if state.done == 3:
            # the raw estimate is the quick images' (46 images at 10/s: under 5 s) ...
            assert state.eta() is not None and state.eta() < 10
            # ... which the lines do not show
            assert shown_eta(state) is None
            assert "ETA" not in plain_line(job, now=now)
            assert "<?" in live_line(job, 120, now=now)
        eta = shown_eta(state)
        if eta is not None:
            seen.append((state.done, eta, left))
    first_done, first_eta, first_left = seen[0]
    # the first ETA shown comes after ETA_AFTER_S of progress (two pages), and is within a
    # fifth of the time truly left (the pages ahead take 3 s each)
    assert first_done <= 3 + int(ETA_AFTER_S // 3.0) + 1
    assert first_eta == pytest.approx(first_left, rel=0.2), seen[:3]
    assert all(eta == pytest.approx(left, rel=0.25) for _, eta, left in seen if left > 10)
    # and the plain line says it then
    state2 = JobState()
    for event, now, _ in _ocr_stream():
        state2.apply(event)
        if state2.done == first_done:
            assert "ETA " in plain_line(_Job(state2), now=now)
            break


def test_a_steady_quick_job_shows_its_eta_early():
    # 100 steps of 0.1 s: once the time measured covers half the time ahead (a third of
    # the way), the ETA shows, and it is right
    state = JobState()
    state.apply({"t": 0.0, "type": "status", "status": "running"})
    first = None
    for step in range(1, 101):
        t = 1.0 + 0.1 * step
        state.apply({"t": t, "type": "progress", "done": step, "total": 100, "unit": "step"})
        if first is None and shown_eta(state) is not None:
            first = step, shown_eta(state), 0.1 * (100 - step)
    assert first is not None and first[0] <= 40, first
    assert first[1] == pytest.approx(first[2], rel=0.05)


def test_one_progress_event_or_no_total_gives_no_eta():
    state = JobState()
    state.apply({"t": 0.0, "type": "status", "status": "running"})
    state.apply({"t": 1.0, "type": "progress", "done": 1, "total": 10})
    assert shown_eta(state) is None
    state = JobState()
    state.apply({"t": 0.0, "type": "status", "status": "running"})
    for k in range(1, 80):
        state.apply({"t": float(k), "type": "progress", "done": k, "total": None})
    assert shown_eta(state) is None and "ETA" not in plain_line(_Job(state), now=80.0)

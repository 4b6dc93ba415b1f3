"""The ETA shown between progress events counts down (round 46 h5): an OCR folder's batch of
four pages under load takes ~50 s, its four results come together, and the ETA a terminal
printed every 10 s stood still through the batch (2.0-2.5x the time left by its end).

The events are an OCR job's as written (``progress_from`` with the batch of four, each
batch's results with ``ready``), built with their times; the oracle is the sequence's own
end. No sleeps, no OCR."""

import pytest

from skiff.jobs.state import JobState, shown_eta

BATCH_S, PAGES, WORK = 50.0, 20, 1e6


def _events():
    yield {"t": 0.0, "type": "status", "rank": 0, "status": "running"}
    yield {"t": 0.1, "type": "info", "rank": 0,
           "progress_from": {"done": 0, "work": 0.0, "batch": 4, "per_unit": 1.5e6}}
    for b in range(PAGES // 4):
        t = 0.1 + BATCH_S * (b + 1)
        for k in range(4):
            done = 4 * b + k + 1
            yield {"t": t + 0.01 * k, "type": "progress", "rank": 0, "done": done,
                   "total": PAGES, "unit": "image", "ready": 3 - k, "work": done * WORK,
                   "work_total": PAGES * WORK}


def test_the_eta_counts_down_between_batches():
    state, events = JobState(), list(_events())
    end = events[-1]["t"]
    last = None
    ratios = []
    for now in range(60, int(end), 5):
        while events and events[0]["t"] <= now:
            state.apply(events.pop(0))
            last = state._point[0] if state._point else None
        frozen, counted = shown_eta(state), shown_eta(state, now)
        if frozen is None or last is None:
            continue
        assert counted == pytest.approx(max(0.0, frozen - (now - last)))
        ratios.append(counted / (end - now))
    assert len(ratios) > 20
    # each batch as long as the last: the time left as it passes, not as at its last result
    assert min(ratios) > 0.8 and max(ratios) < 1.25, ratios


def test_the_terminal_line_counts_down():
    from types import SimpleNamespace

    from skiff.jobs.terminal import plain_line

    state = JobState()
    for event in list(_events())[:10]:  # two batches read: 8 of 20 at t = 100
        state.apply(event)
    job = SimpleNamespace(state=state, id="20261207-000000-ocr-abcd", kind="ocr", name=None)
    at, later = plain_line(job, now=101.0), plain_line(job, now=141.0)
    eta = [line.split("ETA ")[1].split(",")[0] for line in (at, later)]
    assert eta[0] != eta[1], (at, later)

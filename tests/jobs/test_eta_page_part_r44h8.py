"""Round 44 (h8): an OCR folder job's ETA with a page's own part of its time.

Round 43 weighed an OCR job's units by their pixels: right for dense pages (~0.4 s a page,
~0.9 s a megapixel on the CPU), ~4x too high at half way on sparse ones (~0.43 s a page,
~0.07 s a megapixel: a PDF page of 4 MP costs little more than a small PNG). The kernel now
says its batch and the work a page's own part is worth (``progress_from``'s ``batch`` and
``per_unit``), and ``JobState`` fits the batches' times to ``a * pages + b * pixels`` once
two batches of different mixes are seen.

The events are those a job writes, built here with their times (no sleeps, no OCR): the
models made, then batches of four read in the sum of their pages' costs and given out
``gap`` apart, the reporter's 0.1 s throttle holding a batch's last result until the next
batch begins (``entry._Flushed``). The oracle is the sequence's own remaining time.
"""

from __future__ import annotations

import json

import pytest

from skiff.jobs.folded import _decode, _encode
from skiff.jobs.state import JobState
from skiff.kernels.ocr.entry import PAGE_WORK

MIN_GAP, STEP, LOAD = 0.1, 4, 9.0
SMALL, PHOTO, PAGE = 400 * 300, 1600 * 1200, 1654 * 2339


def sparse(px: float) -> float:  # a sparse page of print (round 43 h15's real run)
    return 0.43 + 0.07 * px / 1e6


def dense(px: float) -> float:  # round 43's dense pages
    return 0.4 + 0.9 * px / 1e6


def _job(pixels, cost, *, gap=0.35, per_unit=PAGE_WORK, batch=STEP):
    """(events, the time of the job's end)."""
    work_total = float(sum(pixels))
    t = 0.05 + LOAD
    start = {"done": 0, "work": 0.0}
    if per_unit is not None:
        start.update(batch=batch, per_unit=per_unit)
    events = [{"type": "status", "status": "running", "t": 0.05},
              {"type": "info", "t": t, "progress_from": start}]
    last_emit, done, work, held = -1e9, 0, 0.0, None
    for first in range(0, len(pixels), STEP):
        if held is not None:
            events.append(dict(held, t=t))
            last_emit, held = t, None
        chunk = pixels[first:first + STEP]
        t += sum(map(cost, chunk))
        for k, px in enumerate(chunk):
            done, work = done + 1, work + px
            if k:  # overlays drawn for the first four results, then JSON lines alone
                t += gap if done <= 4 else 0.002
            event = {"type": "progress", "t": t, "done": done, "total": len(pixels),
                     "unit": "image", "work": work, "work_total": work_total}
            if done == len(pixels) or t - last_emit >= MIN_GAP:
                last_emit, held = t, None
                events.append(event)
            else:
                held = event
    return events, t


def _ratios(events, end, at):
    """{done: ETA / the time left} at the progress events whose done is in ``at``."""
    state, out = JobState(), {}
    for event in events:
        state.apply(event)
        if event["type"] == "progress" and event["done"] in at:
            out[event["done"]] = state.eta() / (end - event["t"])
    return out


HALF = {"small first": [SMALL] * 3 + [PHOTO] * 2 + [PAGE] * 3,
        "pages first": [PAGE] * 3 + [PHOTO, SMALL, SMALL, SMALL, PHOTO]}


@pytest.mark.parametrize("order", sorted(HALF))
def test_sparse_pages_at_half_way_within_a_factor_of_two(order):
    """One batch seen: the kernel's guess of a page's part (pixels alone: 2.2x and 0.23x)."""
    ratio = _ratios(*_job(HALF[order], sparse), at={4})[4]
    assert 0.5 <= ratio <= 2, (order, ratio)


# batches of different mixes: small images, sparse PDF pages, small again, pages and photos
MIX = [SMALL] * 4 + [PAGE] * 4 + [SMALL] * 4 + [PAGE, PAGE, PHOTO, PHOTO] + [PAGE] * 4 \
    + [SMALL] * 4


@pytest.mark.parametrize("gap", [0.35, 0.02])
@pytest.mark.parametrize("cost", [sparse, dense], ids=["sparse", "dense"])
def test_the_fit_finds_a_pages_own_part_from_two_batches(cost, gap):
    """From the second batch on the ETA is the time left within 25% for dense and sparse
    pages alike, whatever the kernel guessed (its guess is no part of it once fit: 0 and
    100 MP a page give the same); pixels alone were 19x too low (sparse, at 20/24)."""
    at = {8, 12, 16, 20}
    for per_unit in (PAGE_WORK, 0.0, 1e8):
        ratios = _ratios(*_job(MIX, cost, gap=gap, per_unit=per_unit), at=at)
        assert set(ratios) == at
        assert all(0.8 <= r <= 1.3 for r in ratios.values()), (per_unit, ratios)


def test_pages_all_alike_and_jobs_of_before_are_weighed_as_before():
    """Batches of one mix tell a page's part from its pixels nothing (the guess is then
    moot: the units and the work are in proportion); a run folder without the kernel's
    guess (before round 44, other kinds) weighs the work alone."""
    alike = _job([PHOTO] * 12, sparse)
    plain = _job([PHOTO] * 12, sparse, per_unit=None)
    assert _ratios(*alike, at={4, 8}) == pytest.approx(_ratios(*plain, at={4, 8}))
    # pixels alone, as before: the small images' batch makes the pages look costly (2.2x)
    ratio = _ratios(*_job(HALF["small first"], sparse, per_unit=None), at={4})[4]
    assert ratio > 2


def test_a_fold_keeps_the_fit():
    """A state folded to ``folded.json`` and read back gives the ETA of the one not folded,
    on every progress after."""
    events, _end = _job(MIX, sparse)
    cut = next(k for k, e in enumerate(events) if e["type"] == "progress" and e["done"] == 12)
    whole = JobState()
    for event in events[:cut + 1]:
        whole.apply(event)
    folded = _decode(json.loads(json.dumps(_encode(whole))))
    for event in events[cut + 1:-1]:
        whole.apply(event)
        folded.apply(event)
        assert folded.eta() == pytest.approx(whole.eta())

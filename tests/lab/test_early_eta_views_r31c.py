"""Round 31 (coordinator, after h12): the Jobs sidebar's progress label gave the early guess
the terminal no longer shows: "ETA 3 s" after three quick images of a 49-image OCR job whose
pages take 3 s each. The oracle: the true time left of the stream the events were made from
(a fake clock), as tests/jobs/test_early_eta_r31h12.py builds it."""

from __future__ import annotations

import re

import pytest

from skiff.jobs import JobState
from skiff.lab.payload import progress_label

from ..jobs.test_early_eta_r31h12 import _ocr_stream


def _eta_of(label: str) -> float | None:
    found = re.search(r"ETA ([0-9:.]+)( ?s)?", label)
    if not found:
        return None
    parts = [float(p) for p in found.group(1).split(":")]
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return seconds


def test_the_sidebar_shows_no_eta_from_three_quick_images_then_one_near_the_truth():
    state = JobState()
    shown = []
    for event, now, left in _ocr_stream():
        state.apply(event)
        if state.done == 3:
            assert state.eta() is not None and state.eta() < 10  # the raw guess
            assert "ETA" not in progress_label(state, now=now)
        eta = _eta_of(progress_label(state, now=now))
        if eta is not None and left:
            shown.append((eta, left))
    assert shown, "an ETA is shown once the progress spans enough time"
    eta, left = shown[0]
    assert eta == pytest.approx(left, rel=0.25)

"""The Jobs sidebar's ETA counts down between a job's progress events as the terminal's and
the notebook view's do (round 46: it showed the ETA of the last event, standing still through
an OCR folder's batch). The events are built with their times; the oracle is the ETA at the
last event less the time since it."""

import pytest

from skiff.jobs.state import JobState, shown_eta
from skiff.lab.payload import progress_label


def _eta_s(label: str) -> float:
    clock = label.split("ETA ")[1].split(" ·")[0]
    parts = [float(p) for p in clock.split(":")]
    return sum(p * 60 ** k for k, p in enumerate(reversed(parts)))


def test_the_sidebar_eta_counts_down_between_events():
    state = JobState()
    state.apply({"t": 0.0, "type": "status", "rank": 0, "status": "running"})
    for k in range(1, 9):  # 8 of 20 steps, one every 10 s
        state.apply({"t": 10.0 * k, "type": "progress", "rank": 0, "done": k, "total": 20,
                     "unit": "step"})
    at = shown_eta(state)
    assert at == pytest.approx(120.0, rel=0.05)
    first, later = progress_label(state, now=80.0), progress_label(state, now=110.0)
    assert _eta_s(first) == pytest.approx(at, abs=1.0)
    assert _eta_s(later) == pytest.approx(at - 30.0, abs=1.0), (first, later)

"""Round 42 (h16), left by h15: a job's state kept every metric point as Python objects,
~150 bytes each (a 1,000,000-step run with three metrics held ~450 MB in the kernel that
followed it). The points are kept in flat columns now; what a user reads is unchanged.
Oracles: tracemalloc's count of the bytes the fold holds; the events themselves (the values
and types that went in)."""

from __future__ import annotations

import math
import tracemalloc

from skiff.jobs.state import JobState

N = 100_000


def _events(n: int):
    for i in range(n):
        yield {"type": "metric", "name": "loss", "step": i, "value": 1.0 / (i + 1),
               "t": 1000.0 + i * 0.01}


def test_100000_points_hold_under_40_bytes_each():
    state = JobState()
    state.apply({"type": "metric", "name": "loss", "step": 0, "value": 1.0, "t": 1.0})
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for event in _events(N):  # each event made and dropped, as a follower reads them
            state.apply(event)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(state.metrics["loss"]) == N + 1
    assert held / N < 40, f"{held / N:.0f} bytes a point"  # tuples: ~150


def test_points_read_back_as_they_went_in():
    from skiff.jobs import Job

    job = Job.create("demo", {}, target="x:y", runner="thread")
    points = [(0, 2.5, 1.25), (None, 3, 2.0), (7, -0.0, None), (2 ** 70, 1.5, 3.0),
              (8, 2 ** 60 + 1, 4.0), (9, float("inf"), 5.0), (10, 0, 6.0)]
    state = JobState()
    for step, value, t in points:
        state.apply({"type": "metric", "name": "m", "step": step, "value": value, "t": t})
        job.emit("metric", name="m", value=value, step=step)
    assert len(state.metrics["m"]) == len(points)
    for got, want in zip(state.metrics["m"], points):
        assert got == want and [type(x) for x in got] == [type(x) for x in want], (got, want)
        assert math.copysign(1, got[1]) == math.copysign(1, want[1])
    assert state.metrics["m"][-1] == points[-1] and state.metrics["m"][1:3] == points[1:3]
    assert state.last("m") == 0 and type(state.last("m")) is int
    # job.metrics: [(step, value)], as the docs show it
    got = job.metrics["m"]
    assert got == [(s, v) for s, v, _t in points]
    assert [type(v) for _s, v in got] == [type(v) for _s, v, _t in points]

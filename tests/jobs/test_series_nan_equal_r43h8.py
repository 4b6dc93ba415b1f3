"""Round 43 (h8): a metric's Series compared a NaN point as unequal to itself.

A diverged training logs `loss` NaN. A list of points holds each point's float once, and
Python's list/tuple equality tests identity first, so `points == points` holds; a Series
reads a new float at each read and `series == series` was False (and `state.metrics ==
state.metrics` of a run that diverged). Oracle: the equality of the list of points."""

from __future__ import annotations

import math

from skiff.jobs.series import Series
from skiff.jobs.state import JobState

NAN = float("nan")
POINTS = [(0, 2.5, 1.0), (1, NAN, 1.5), (2, NAN, None), (None, 3, 2.0)]


def test_nan_points_equal_as_the_list():
    series = Series(POINTS)
    assert POINTS == list(POINTS)  # the oracle: the list equals itself, NaN and all
    assert series == series
    assert series == POINTS and POINTS == series
    assert series == Series(POINTS)
    assert series == [tuple(p) for p in POINTS]


def test_nan_not_equal_to_a_number_or_another_place():
    series = Series(POINTS)
    moved = [(0, NAN, 1.0), (1, 2.5, 1.5), (2, NAN, None), (None, 3, 2.0)]
    assert series != moved
    assert series != [(0, 2.5, 1.0), (1, 0.0, 1.5), (2, NAN, None), (None, 3, 2.0)]
    assert series != POINTS[:3]
    assert not math.isnan(series[0][1]) and math.isnan(series[1][1])


def test_state_of_a_diverged_run_equals_itself():
    state = JobState()
    for i, value in enumerate([1.0, 0.5, NAN, NAN]):
        state.apply({"type": "metric", "name": "loss", "step": i, "value": value,
                     "t": 10.0 + i})
    assert state.metrics["loss"] == state.metrics["loss"]
    assert state.metrics == {"loss": [(0, 1.0, 10.0), (1, 0.5, 11.0), (2, NAN, 12.0),
                                      (3, NAN, 13.0)]}

"""Round 29: a learned grid outside the network's training box says so (the sizes there are
an extrapolation; the drag error was measured only inside). The box is checked against the
training shapes themselves (``aero.learn.TRAINING_SHAPES``, an independent record)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skiff.kernels.aero.learn import HELD_OUT_SHAPES, TRAINING_SHAPES, train_size_model
from skiff.kernels.solve.flow.adapt import (
    TRAINED_BOX,
    graded_size,
    learned_size,
    load_size_model,
    outside_training,
    trained_box,
)
from skiff.kernels.solve.flow.nose import NoseShape
from skiff.kernels.solve.flow.nose_job import nose_size


def _extent(shapes):
    return {k: (min(getattr(s, k) for s in shapes), max(getattr(s, k) for s in shapes))
            for k in ("length", "bluntness", "clearance")}


def test_the_shipped_box_is_the_training_shapes_extent_at_re_1000():
    box = trained_box(load_size_model())
    for k, (lo, hi) in _extent(TRAINING_SHAPES).items():
        assert box[k] == pytest.approx((lo, hi)), k
    assert box["re"] == (1000.0, 1000.0) == TRAINED_BOX["re"]


def test_inside_the_box_no_warning_outside_names_the_parameter():
    model = load_size_model()
    for shape in (TRAINING_SHAPES[0], HELD_OUT_SHAPES[1]):
        assert learned_size(shape, 1000.0, model=model).outside == []
    box = trained_box(model)
    for shape in TRAINING_SHAPES + HELD_OUT_SHAPES:      # the box test alone (no field)
        assert outside_training(shape, 1000.0, box) == []
    thin = NoseShape(7.0, 0.05, 0.06)
    out = learned_size(thin, 1000.0, model=model).outside
    assert out == ["length 7 (trained 1.5..5)", "bluntness 0.05 (trained 0.2..0.9)",
                   "clearance 0.06 (trained 0.1..0.3)"]
    # Re: within 20% of the trained one passes, three times it does not
    assert outside_training(HELD_OUT_SHAPES[0], 1150.0, trained_box(model)) == []
    assert outside_training(HELD_OUT_SHAPES[0], 3000.0, trained_box(model)) == \
        ["re 3000 (trained 1000)"]


def test_nose_size_warns_and_records_the_extrapolation():
    logged = []

    class Rec:
        def log(self, message, level="info"):
            logged.append((level, message))

    with pytest.warns(UserWarning, match=r"learned grid is extrapolated: re 3000"):
        _, record = nose_size(HELD_OUT_SHAPES[0], "learned", 3000.0, reporter=Rec())
    assert record["learned_outside"] == ["re 3000 (trained 1000)"]
    assert logged and logged[0][0] == "warning" and "--adapt estimator" in logged[0][1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, record = nose_size(HELD_OUT_SHAPES[0], "learned", 1000.0)
    assert "learned_outside" not in record


def test_a_trained_model_carries_its_own_box(tmp_path):
    shapes = TRAINING_SHAPES[:2]
    path = tmp_path / "size.npz"
    train_size_model(shapes, re=400.0, path=path, steps=2,
                     fields=[graded_size(s) for s in shapes])
    box = trained_box(load_size_model(path))
    for k, (lo, hi) in _extent(shapes).items():
        assert box[k] == pytest.approx((lo, hi)), k
    assert box["re"] == (400.0, 400.0)
    # a shape inside the shipped box but outside this one's is flagged by this one's
    probe = NoseShape(4.0, 0.5, 0.28)
    assert outside_training(probe, 400.0, box) == \
        ["length 4 (trained 1.5..2)", "clearance 0.28 (trained 0.1..0.25)"]
    assert np.isfinite(box["length"][0])

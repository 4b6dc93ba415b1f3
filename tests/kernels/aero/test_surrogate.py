"""The drag surrogate on a synthetic drag law (no flow solves): held-out error, the bound's
coverage on held-out points, refusal outside the sampled box, files, and the design loop
against the closed-form nose area."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import qmc

import skiff.aero
from skiff.kernels.aero import NoseShape, Samples, Surrogate, design, nose_volume

DOMAIN = {"length": (2.0, 5.0), "bluntness": (0.0, 1.0), "clearance": (0.1, 0.3)}


def _law(p):
    """A smooth stand-in for cd(length, bluntness, clearance), with the kinds of curvature
    the real one has (not a quadratic, so the networks have work to do)."""
    L, b, c = p[:, 0], p[:, 1], p[:, 2]
    return 0.9 + 0.25 / L + 0.15 * b ** 2 + 0.4 * np.exp(-c / 0.1) + 0.03 * np.sin(3 * b) * L


def _samples(n, seed):
    unit = qmc.LatinHypercube(d=3, seed=seed).random(n)
    lo = np.array([v[0] for v in DOMAIN.values()])
    hi = np.array([v[1] for v in DOMAIN.values()])
    p = lo + unit * (hi - lo)
    return Samples(p, _law(p), np.zeros(n), np.zeros(n, int), np.zeros(n), DOMAIN, 1000.0)


@pytest.fixture(scope="module")
def model():
    return Surrogate.fit(_samples(64, 0), members=3, steps=400, share=0.95)


def test_held_out_error_and_coverage(model):
    test = _samples(300, 7)
    preds = model.predict([dict(zip(("length", "bluntness", "clearance"), r))
                           for r in test.params])
    cd = np.array([p.cd for p in preds])
    err = np.abs(cd - test.cd) / test.cd
    inside = np.mean([t in p for t, p in zip(test.cd, preds)])
    assert err.max() < 0.02, err.max()
    assert inside >= 0.9, inside              # stated 95%, calibrated on 20 points
    widths = np.array([(p.hi - p.lo) / p.cd for p in preds])
    assert widths.max() < 0.2                 # a bound, not everything
    assert model.record["calibration"] == 20 and model.record["fit"] == 44


def test_outside_the_domain_is_refused_or_flagged(model):
    with pytest.raises(ValueError, match="outside the sampled domain.*length 6"):
        model.predict({"length": 6.0, "bluntness": 0.5, "clearance": 0.2})
    p = model.predict({"length": 6.0, "bluntness": 0.5, "clearance": 0.2}, outside="flag")
    assert not p.in_domain and p.hi == np.inf
    with pytest.raises(ValueError, match="unknown parameter 'height'"):
        model.predict({"length": 3.0, "bluntness": 0.5, "clearance": 0.2, "height": 1})
    assert model.domain == DOMAIN


def test_save_and_load(model, tmp_path):
    path = model.save(tmp_path / "s.npz")
    again = Surrogate.load(path)
    q = {"length": 3.3, "bluntness": 0.2, "clearance": 0.14}
    a, b = model.predict(q), again.predict(q)
    assert (a.cd, a.lo, a.hi) == pytest.approx((b.cd, b.lo, b.hi), rel=1e-12)
    assert again.domain == model.domain


def test_design_keeps_the_volume_and_finds_the_minimum(model):
    out = design(model, volume=2.0, points=101)
    p = out["params"]
    assert nose_volume(p["length"], p["bluntness"]) == pytest.approx(2.0, rel=1e-9)
    assert NoseShape(**p).volume() == pytest.approx(2.0, rel=1e-3)   # the drawn outline
    # the brute-force minimum of the synthetic law on the same constraint
    B, C = np.meshgrid(np.linspace(0, 1, 101), np.linspace(0.1, 0.3, 101), indexing="ij")
    L = 2.0 / nose_volume(1.0, B)
    ok = (L >= 2) & (L <= 5)
    truth = _law(np.column_stack([L[ok], B[ok], C[ok]])).min()
    assert out["cd"] == pytest.approx(truth, rel=0.02)
    with pytest.raises(ValueError, match="no shape in the sampled box"):
        design(model, volume=50.0)


def test_design_names_the_areas_the_box_gives(model):
    """Round 47 (h14): a refused area named nose_volume(l0, b1)..nose_volume(l1, b0) (here
    1.88..3.42, where the box gives 1.37..4.70). Oracle: the drawn outlines' areas at the
    box's corners (the area grows with length and bluntness)."""
    small = NoseShape(length=2.0, bluntness=0.0, clearance=0.2).volume()
    large = NoseShape(length=5.0, bluntness=1.0, clearance=0.2).volume()
    for volume, hint in ((0.9 * small, "shorter or sharper"), (1.1 * large, "longer or blunter")):
        with pytest.raises(ValueError, match=hint) as err:
            design(model, volume=volume)
        lo, hi = (float(v) for v in str(err.value).split("give areas ")[1].split(";")[0]
                  .split(".."))
        assert (lo, hi) == (pytest.approx(small, rel=2e-3), pytest.approx(large, rel=2e-3))
    # just inside either end is designed, not refused
    for volume in (1.01 * small, 0.99 * large):
        out = design(model, volume=volume, points=21)
        assert out["volume"] == volume


def test_calibration_needs_enough_held_out_solves():
    with pytest.raises(ValueError, match="needs at least 19 calibration"):
        Surrogate.fit(_samples(40, 1), calibration=10)


def test_public_names():
    missing = [n for n in skiff.aero.__all__ if not hasattr(skiff.aero, n)]
    assert skiff.aero.__all__ and missing == []
    assert skiff.aero.Surrogate is Surrogate


def test_wrong_shapes_and_types_are_one_clear_error(model, tmp_path):
    """Rows of two numbers were reshaped into rows of three (wrong answers, no error); a flat
    row, a word for a number, NaN in the fast path, a dict for the surrogate: each one line."""
    with pytest.raises(ValueError, match="row has 3 numbers.*got 2"):
        model.predict([[3.0, 0.4], [0.15, 3.0], [0.4, 0.15]])
    with pytest.raises(ValueError, match="rows of 3 numbers.*shape \\(3, 2\\)"):
        model.predict_arrays([[3.0, 0.4], [0.15, 3.0], [0.4, 0.15]])
    with pytest.raises(TypeError, match="a dict or a row of 3 numbers"):
        model.predict([3.0, 0.4, 0.15])
    with pytest.raises(TypeError, match="length must be a number, got 'three'"):
        model.predict({"length": "three", "bluntness": 0.4, "clearance": 0.15})
    with pytest.raises(TypeError, match="dict"):
        model.predict("length=3")
    with pytest.raises(ValueError, match="not a finite number"):
        model.predict_arrays([[np.nan, 0.4, 0.15]])
    assert model.predict([[3.0, 0.4, 0.15]])[0].cd == pytest.approx(
        model.predict({"length": 3.0, "bluntness": 0.4, "clearance": 0.15}).cd)
    with pytest.raises(TypeError, match="design takes a Surrogate"):
        design({"domain": DOMAIN}, volume=2.0)
    with pytest.raises(TypeError, match="volume must be a number, got .two."):
        design(model, volume="two")
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="volume .* must be a positive number"):
            design(model, volume=bad)


def test_an_extrapolation_claims_no_bound_and_save_load_by_one_name(model, tmp_path):
    p = model.predict({"length": 6.0, "bluntness": 0.5, "clearance": 0.2}, outside="flag")
    assert "extrapolated, no bound" in repr(p) and "95%" not in repr(p)
    written = model.save(tmp_path / "drag")          # np.savez adds .npz
    assert written.name == "drag.npz"
    back = Surrogate.load(tmp_path / "drag")          # the name given to save
    q = {"length": 3.0, "bluntness": 0.4, "clearance": 0.15}
    assert back.predict(q) == model.predict(q)

"""Round 45 (h12): a sweep over two of the three parameters, the third held fixed, as an
aerodynamicist runs one (a fixed ground clearance, the nose's length and bluntness varied).

Before: ``sweep(clearance=0.15)`` and ``sweep(clearance=(0.15, 0.15))`` were refused
("clearance must be a range (lo, hi)" / "must have lo < hi"), and a ``Surrogate`` fitted on
such samples scaled the fixed parameter by 0/0: NaN everywhere. Oracle: a known drag law
of length and bluntness (the fit must find it to a fraction of a percent) and the
refusal of a query at another clearance, which no solve of the sweep saw."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skiff.kernels.aero import Samples, Surrogate, design
from skiff.kernels.aero.sweep import check_domain

FIXED = 0.18
DOMAIN = {"length": (2.5, 4.0), "bluntness": (0.2, 0.8), "clearance": (FIXED, FIXED)}


def law(p):
    p = np.atleast_2d(p)
    return 0.9 + 0.25 / p[:, 0] + 0.15 * p[:, 1] ** 2 + 0.4 * np.exp(-p[:, 2] / 0.1)


def _samples(n=40):
    unit = np.random.default_rng(1).random((n, 3))
    lo = np.array([v[0] for v in DOMAIN.values()])
    hi = np.array([v[1] for v in DOMAIN.values()])
    p = lo + unit * (hi - lo)
    return Samples(p, law(p), np.zeros(n), np.zeros(n, int), np.zeros(n), DOMAIN, 200.0)


def test_one_number_holds_a_parameter_fixed():
    assert check_domain(length=(2.5, 4), bluntness=(0.2, 0.8), clearance=FIXED) == DOMAIN
    assert check_domain(length=(2.5, 4), bluntness=(0.2, 0.8),
                        clearance=(FIXED, FIXED)) == DOMAIN
    with pytest.raises(ValueError, match="lo < hi"):
        check_domain(length=(4, 2.5), bluntness=(0.2, 0.8), clearance=FIXED)
    with pytest.raises(ValueError, match="range"):
        check_domain(length=(2.5, 4), bluntness=True, clearance=FIXED)
    # a fixed value is checked as an end of a range is (the model's limits)
    with pytest.raises(ValueError, match="clearance must be > 0"):
        check_domain(length=(2.5, 4), bluntness=(0.2, 0.8), clearance=-0.1)


def test_a_surrogate_of_two_parameters_fits_refuses_the_third_and_designs():
    model = Surrogate.fit(_samples(), members=1, steps=20)
    inside = [(3.2, 0.5, FIXED), (2.7, 0.3, FIXED), (3.9, 0.75, FIXED)]
    got = model.predict([dict(zip(("length", "bluntness", "clearance"), r)) for r in inside])
    for r, g in zip(inside, got):
        assert np.isfinite(g.cd) and g.in_domain
        assert g.cd == pytest.approx(float(law(r)[0]), rel=5e-3)
    with pytest.raises(ValueError, match="held it at 0.18"):
        model.predict(length=3.2, bluntness=0.5, clearance=0.25)
    flagged = model.predict(length=3.2, bluntness=0.5, clearance=0.25, outside="flag")
    assert not flagged.in_domain and flagged.hi == np.inf
    assert "clearance 0.18 (fixed)" in repr(model)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        best = design(model, volume=2.0, points=21)
    # the fixed clearance is not an "edge of the sampled box" the drag may fall beyond
    assert "clearance" not in best["at_edge"]
    assert not any("clearance" in str(w.message) for w in seen)
    assert best["params"]["clearance"] == pytest.approx(FIXED)

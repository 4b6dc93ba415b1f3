"""Round 33 (h10): ``design`` says when its optimum sits on the edge of the sampled box.

On the stored 64-shape sweep (Re 200), every area's optimum was at bluntness 0 (the box's
edge and the model's own limit) and area 3.5's at length 4.975 of the box's 5 (bluntness
0.025: the shape that keeps the area inside the box, an artifact of where the sweep stopped),
with nothing said; where the area's curve met the sampled lengths' end, the grid's nearest
bluntness missed the optimum by 0.14% of drag. Oracle: SciPy's SLSQP on the same surrogate
and constraint (the grid's optimum must match it, and its active bounds must be the ones
named), on two known drag laws: one that falls towards the box's clearance end, one with its
minimum inside."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import qmc

from skiff.kernels.aero import Samples, Surrogate, design, nose_volume

DOMAIN = {"length": (2.0, 5.0), "bluntness": (0.0, 1.0), "clearance": (0.1, 0.3)}


def _falls(p):      # drag falls with the clearance up to the box's end (ground effect)
    L, b, c = p[:, 0], p[:, 1], p[:, 2]
    return 0.9 + 0.25 / L + 1.0 * (b - 0.5) ** 2 + 0.4 * np.exp(-c / 0.1)


def _inside(p):     # a minimum in clearance at 0.2, inside the box
    L, b, c = p[:, 0], p[:, 1], p[:, 2]
    return 0.9 + 0.25 / L + 1.0 * (b - 0.5) ** 2 + 0.05 * ((c - 0.2) / 0.1) ** 2


def _fit(law, seed=0):
    unit = qmc.LatinHypercube(d=3, seed=seed).random(64)
    lo = np.array([v[0] for v in DOMAIN.values()])
    hi = np.array([v[1] for v in DOMAIN.values()])
    p = lo + unit * (hi - lo)
    s = Samples(p, law(p), np.zeros(64), np.zeros(64, int), np.zeros(64), DOMAIN, 200.0)
    return Surrogate.fit(s, members=3, steps=300, seed=seed)


def _scipy_optimum(model, volume):
    """SLSQP over (bluntness, clearance), the length from the area, inside the box."""
    g = float(nose_volume(1.0, 0.0))

    def length(x):
        return volume / float(nose_volume(1.0, x[0]))

    def cd(x):      # SLSQP may step outside the lengths: the surrogate there refuses
        L = length(x)
        inside = min(max(L, 2.0), 5.0)
        return float(model.predict_arrays([[inside, x[0], x[1]]])[0][0]) + abs(L - inside)

    cons = [{"type": "ineq", "fun": lambda x: length(x) - 2.0},
            {"type": "ineq", "fun": lambda x: 5.0 - length(x)}]
    best = None
    for b0 in (0.2, 0.5, 0.8):
        r = minimize(cd, [b0, 0.2], method="SLSQP", bounds=[(0, 1), (0.1, 0.3)],
                     constraints=cons, options={"ftol": 1e-12})
        if r.success and (best is None or r.fun < best.fun):
            best = r
    assert best is not None and g > 0
    return best.x, best.fun


@pytest.fixture(scope="module")
def falls():
    return _fit(_falls)


def test_an_optimum_on_the_sampled_clearance_end_is_said(falls):
    (b, c), cd = _scipy_optimum(falls, 2.0)
    assert c == pytest.approx(0.3, abs=1e-6)             # SciPy: the clearance bound active
    with pytest.warns(UserWarning, match=r"clearance 0\.3 \(the highest sampled; the model "
                                         r"allows up to 1\)"):
        out = design(falls, volume=2.0)
    assert out["cd"] == pytest.approx(cd, rel=2e-4)       # the grid's optimum is SciPy's
    assert out["params"]["bluntness"] == pytest.approx(b, abs=0.01)
    assert list(out["at_edge"]) == ["clearance"] and "note" in out


def test_an_optimum_inside_the_box_says_nothing():
    model = _fit(_inside)
    (b, c), cd = _scipy_optimum(model, 2.0)
    assert 0.15 < c < 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = design(model, volume=2.0)
    assert out["at_edge"] == {} and "note" not in out
    assert out["cd"] == pytest.approx(cd, rel=2e-4)
    assert out["params"]["clearance"] == pytest.approx(c, abs=0.005)


def test_the_length_end_exactly_and_the_models_own_limit(falls):
    # area 1.5: bluntness 0.5 would need length 1.6 < 2; SciPy finds the length bound active
    (b, c), cd = _scipy_optimum(falls, 1.5)
    assert 1.5 / float(nose_volume(1.0, b)) == pytest.approx(2.0, abs=1e-6)
    with pytest.warns(UserWarning, match=r"length 2 \(the lowest sampled; the model "
                                         r"allows down to 0\.5\)"):
        out = design(falls, volume=1.5)
    assert set(out["at_edge"]) == {"length", "clearance"}
    # the grid's nearest bluntness (0.095) was 0.14% above SciPy's optimum; the area's curve
    # now meets the length's end exactly
    assert out["cd"] == pytest.approx(cd, rel=1e-6)
    assert out["params"]["bluntness"] == pytest.approx(b, abs=1e-5)
    # a box whose bluntness ends at the model's limit 0: named, not warned about
    model = _fit(lambda p: _inside(p) + 2.0 * p[:, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = design(model, volume=1.5)
    assert out["at_edge"] == {"bluntness": "the lowest sampled, the model's limit too"}


def test_a_flagged_extrapolation_holds_no_value(falls):
    """``outside='flag'`` answers lo, hi = 0, inf: ``cd in prediction`` was True for any cd,
    so a coverage count over such queries called every extrapolation "inside"."""
    p = falls.predict({"length": 6.0, "bluntness": 0.5, "clearance": 0.2}, outside="flag")
    with pytest.raises(ValueError, match="no bound"):
        1.0 in p  # noqa: B015
    q = falls.predict({"length": 3.0, "bluntness": 0.5, "clearance": 0.2})
    truth = float(_falls(np.array([[3.0, 0.5, 0.2]]))[0])
    assert (truth in q) == (q.lo <= truth <= q.hi)

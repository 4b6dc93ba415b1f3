"""Queries as users write them (round 31): a shape dict carrying its Reynolds number (the
sweep's is accepted, another is refused naming the sweep to run: before, any ``re`` key was
"unknown parameter"), a flat row (the error shows the call that works), a boolean or NaN
Reynolds number (True was solved as Re 1)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import qmc

from skiff.kernels.aero import Samples, Surrogate
from skiff.kernels.solve.flow.nose import check_re

DOMAIN = {"length": (2.0, 5.0), "bluntness": (0.0, 1.0), "clearance": (0.1, 0.3)}


def _law(p):
    return 0.9 + 0.25 / p[:, 0] + 0.15 * p[:, 1] ** 2 + 0.4 * np.exp(-p[:, 2] / 0.1)


@pytest.fixture(scope="module")
def model():
    unit = qmc.LatinHypercube(d=3, seed=0).random(40)
    lo, hi = (np.array([v[i] for v in DOMAIN.values()]) for i in (0, 1))
    p = lo + unit * (hi - lo)
    n = len(p)
    return Surrogate.fit(Samples(p, _law(p), np.zeros(n), np.zeros(n, int), np.zeros(n),
                                 DOMAIN, 200.0), members=2, steps=100)


def test_a_shape_with_the_sweeps_re_is_answered_another_re_refused(model):
    shape = {"length": 3.0, "bluntness": 0.4, "clearance": 0.15}
    plain = model.predict(shape)
    assert model.predict({**shape, "re": 200}) == plain
    assert model.predict([{**shape, "re": 200.0}, shape]) == [plain, plain]
    with pytest.raises(ValueError, match="fitted on a sweep at Re 200 only; the shape asks "
                                         "Re 1000: run skiff.aero.sweep\\(\\.\\.\\., re=1000\\)"):
        model.predict({**shape, "re": 1000})
    with pytest.raises(TypeError, match="re must be a number"):
        model.predict({**shape, "re": "fast"})


def test_a_flat_row_names_the_call_that_works(model):
    with pytest.raises(TypeError, match=r"one shape as a row: predict\(\[\[3, 0\.4, 0\.15\]\]\)"):
        model.predict([3.0, 0.4, 0.15])
    assert model.predict([[3.0, 0.4, 0.15]])[0] == model.predict(
        {"length": 3.0, "bluntness": 0.4, "clearance": 0.15})


@pytest.mark.parametrize("re, needle", [
    (True, "must be a number > 0, got True"),
    (float("nan"), "must be a finite number > 0, got nan"),
    (float("inf"), "must be a finite number > 0, got inf"),
    (0, "must be > 0, got 0"),
])
def test_bad_reynolds_numbers(re, needle):
    with pytest.raises(ValueError, match=needle):
        check_re(re)
    assert check_re(np.float32(500.0)) == 500.0 and check_re("1000") == 1000.0


def test_a_nose_shape_is_a_query_a_profile_is_refused(model):
    from skiff.kernels.aero import NoseProfile, NoseShape

    shape = NoseShape(3.0, 0.4, 0.15)
    want = model.predict({"length": 3.0, "bluntness": 0.4, "clearance": 0.15})
    assert model.predict(shape) == want
    assert model.predict([shape, NoseShape(4.0, 0.2, 0.2)])[0] == want
    wedge = NoseProfile([(2.0, 0.0), (0.0, 0.5), (2.0, 1.0)])
    with pytest.raises(ValueError, match="profile of your own: the surrogate knows the "
                                         "parametric noses"):
        model.predict(wedge)

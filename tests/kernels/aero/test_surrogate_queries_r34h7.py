"""Round 34 (h7): the surrogate as a scikit-learn-minded user queries it.

Before: ``predict(length=3, bluntness=0.4, clearance=0.15)`` raised Python's "unexpected
keyword argument 'length'", and a shape just outside the box was refused as "length 2
(sampled 2..5)" (length 1.999999999 printed with 6 digits: it read inside). Oracle: the
same query as a dict; a known drag law for the fit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import qmc

from skiff.kernels.aero import Samples, Surrogate

DOMAIN = {"length": (2.0, 5.0), "bluntness": (0.0, 1.0), "clearance": (0.1, 0.3)}


def _law(p):
    L, b, c = p[:, 0], p[:, 1], p[:, 2]
    return 0.9 + 0.25 / L + 0.15 * b ** 2 + 0.4 * np.exp(-c / 0.1)


@pytest.fixture(scope="module")
def model():
    unit = qmc.LatinHypercube(d=3, seed=0).random(48)
    lo = np.array([v[0] for v in DOMAIN.values()])
    hi = np.array([v[1] for v in DOMAIN.values()])
    p = lo + unit * (hi - lo)
    n = len(p)
    return Surrogate.fit(Samples(p, _law(p), np.zeros(n), np.zeros(n, int), np.zeros(n),
                                 DOMAIN, 1000.0), members=2, steps=200, seed=0)


def test_keywords_are_the_dict(model):
    shape = {"length": 3.0, "bluntness": 0.4, "clearance": 0.15}
    a, b = model.predict(**shape), model.predict(shape)
    assert (a.cd, a.lo, a.hi) == (b.cd, b.lo, b.hi)
    assert abs(a.cd - _law(np.array([[3.0, 0.4, 0.15]]))[0]) < 0.02 * a.cd
    with pytest.raises(TypeError, match="not both"):
        model.predict(shape, length=3.0)
    with pytest.raises(TypeError, match="needs a shape"):
        model.predict()
    with pytest.raises(ValueError, match="unknown parameter 'lenght'"):
        model.predict(lenght=3.0, bluntness=0.4, clearance=0.15)


def test_just_outside_reads_outside(model):
    with pytest.raises(ValueError, match=r"length 1\.999999999 \(below the sampled 2\.\.5\)"):
        model.predict(length=2.0 - 1e-9, bluntness=0.4, clearance=0.15)
    with pytest.raises(ValueError, match=r"clearance 0\.31 \(above the sampled 0\.1\.\.0\.3\)"):
        model.predict(length=3.0, bluntness=0.4, clearance=0.31)
    flagged = model.predict(length=5.0 + 1e-6, bluntness=0.4, clearance=0.15, outside="flag")
    assert not flagged.in_domain
    # on the edge (to rounding) is inside, with a bound
    edge = model.predict(length=5.0 + 1e-13, bluntness=0.4, clearance=0.15)
    assert edge.in_domain and edge.lo < edge.cd < edge.hi

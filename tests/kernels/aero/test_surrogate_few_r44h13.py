"""Round 44 (h13): too few solves for a surrogate are refused in words that add up.

Before: ``Surrogate.fit`` on a 6-shape sweep said "6 samples leave -13 to fit after 19 for
calibration: give at least 31". Oracle: the count it names is the least that fits (one
fewer is refused, that many is fitted)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from skiff.kernels.aero import Samples, Surrogate

DOMAIN = {"length": (2.0, 5.0), "bluntness": (0.0, 1.0), "clearance": (0.1, 0.3)}


def _samples(n):
    unit = np.random.default_rng(0).random((n, 3))
    lo = np.array([v[0] for v in DOMAIN.values()])
    hi = np.array([v[1] for v in DOMAIN.values()])
    p = lo + unit * (hi - lo)
    cd = 0.9 + 0.25 / p[:, 0] + 0.15 * p[:, 1] ** 2 + 0.4 * np.exp(-p[:, 2] / 0.1)
    return Samples(p, cd, np.zeros(n), np.zeros(n, int), np.zeros(n), DOMAIN, 200.0)


def test_too_few_samples_name_the_least_that_fits():
    with pytest.raises(ValueError) as info:
        Surrogate.fit(_samples(6), members=1, steps=5)
    msg = str(info.value)
    assert "-" not in msg.split("give")[0], msg          # no negative count
    assert "6 samples are too few" in msg and "keeps 19 apart" in msg
    least = int(re.search(r"give at least (\d+)", msg).group(1))
    with pytest.raises(ValueError, match="too few"):
        Surrogate.fit(_samples(least - 1), members=1, steps=5)
    fitted = Surrogate.fit(_samples(least), members=1, steps=5)
    assert fitted.predict(length=3, bluntness=0.4, clearance=0.15).in_domain

"""Round 30: the surrogate's bound stated as a coverage a user can read. Oracle: a Monte
Carlo of split-conformal calibration itself (exchangeable scores: the bound is the k-th
smallest of n calibration scores; a new score falls below it with probability equal to the
scores' distribution at it, uniform scores making that the threshold itself)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skiff.kernels.aero.surrogate import Surrogate


def _surrogate(n_cal, share=0.95):
    domain = {"length": (2, 4), "bluntness": (0.2, 0.8), "clearance": (0.1, 0.3)}
    return Surrogate(domain, np.zeros(10), [], 1.0, 1.0, 0.01, share, 200.0,
                     record={"calibration": n_cal})


@pytest.mark.parametrize("n_cal, share", [(19, 0.95), (20, 0.95), (60, 0.9)])
def test_the_coverage_matches_a_simulation_of_the_calibration(n_cal, share):
    c = _surrogate(n_cal, share).coverage(confidence=0.9)
    rng = np.random.default_rng(1)
    k = math.ceil((n_cal + 1) * share)
    covered = np.sort(rng.uniform(size=(40000, n_cal)), axis=1)[:, k - 1]
    assert c["expected"] == pytest.approx(covered.mean(), abs=3e-3)
    assert c["at_least"] == pytest.approx(np.quantile(covered, 0.1), abs=5e-3)
    assert c["expected"] >= share and c["at_least"] < share
    assert f"{100 * c['at_least']:.1f}%" in c["text"] and str(n_cal) in c["text"]


def test_more_calibration_solves_narrow_the_coverage_and_repr_says_it():
    few, many = _surrogate(19).coverage(), _surrogate(200).coverage()
    assert few["at_least"] < many["at_least"] < 0.95
    assert "with 90% confidence" in repr(_surrogate(19))
    with pytest.raises(ValueError, match="confidence must be in"):
        _surrogate(19).coverage(confidence=1.5)

"""Round 38 (h9): an engineer asks the surrogate for a speed or a yaw angle.

``solve_nose(speed=80)`` and ``solve_nose(yaw=5)`` say why the model has none (round 36);
the surrogate said only "unknown parameter 'speed'". Oracle: a known drag law for the fit,
and ``solve_nose``'s own reason (``nose_job.keyword_why``) in the same words."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import qmc

from skiff.kernels.aero import Samples, Surrogate
from skiff.kernels.solve.flow.nose_job import keyword_why

DOMAIN = {"length": (2.0, 5.0), "bluntness": (0.0, 1.0), "clearance": (0.1, 0.3)}
SHAPE = {"length": 3.0, "bluntness": 0.4, "clearance": 0.15}


def _law(p):
    L, b, c = p[:, 0], p[:, 1], p[:, 2]
    return 0.9 + 0.25 / L + 0.15 * b ** 2 + 0.4 * np.exp(-c / 0.1)


@pytest.fixture(scope="module")
def model():
    p = qmc.scale(qmc.LatinHypercube(d=3, seed=0).random(40),
                  [v[0] for v in DOMAIN.values()], [v[1] for v in DOMAIN.values()])
    n = len(p)
    return Surrogate.fit(Samples(p, _law(p), np.zeros(n), np.zeros(n, int), np.zeros(n),
                                 DOMAIN, 200.0), members=2, steps=100, seed=0)


@pytest.mark.parametrize("word", ["speed", "yaw", "velocity", "crosswind"])
def test_a_speed_or_yaw_says_why(model, word):
    with pytest.raises(ValueError) as err:
        model.predict({**SHAPE, word: 3.0})
    text = str(err.value)
    assert f"unknown parameter {word!r}" in text and "re=, its sweep's 200" in text
    assert keyword_why(word) in text


def test_an_unknown_word_keeps_the_short_line(model):
    with pytest.raises(ValueError) as err:
        model.predict({**SHAPE, "lenght": 3.0})
    assert str(err.value).endswith("(and re=, its sweep's 200)")


def test_the_shape_itself_predicts_the_law(model):
    pred = model.predict(SHAPE)
    assert abs(pred.cd - _law(np.array([[3.0, 0.4, 0.15]]))[0]) < 0.03 * pred.cd

"""A shape outside the sweep's box gets no bound from ``Surrogate.predict_arrays`` either
(round 48 h7): a parameter the sweep held fixed scaled to 0 whatever its value, so
``predict_arrays([[3, 0.5, 0.3]])`` of a sweep held at clearance 0.15 answered a cd with a
95% bound (a guess), where ``predict`` refuses it; and a refusal said only "outside". The
oracle is the box itself (the sweep's ranges) and ``predict``'s refusal of the same row. A
surrogate built by hand (a constant law, no fit: nothing here needs one)."""

import numpy as np
import pytest

from skiff.kernels.aero import Surrogate

DOMAIN = {"length": (2.0, 5.0), "bluntness": (0.0, 1.0), "clearance": (0.15, 0.15)}


@pytest.fixture
def held():
    member = {"W0": np.zeros((1, 3)), "b0": np.zeros(1)}       # the residual network: 0
    coef = np.r_[np.log(1.2), np.zeros(9)]                      # log cd = log 1.2
    return Surrogate(DOMAIN, coef, [member], 1.0, 2.0, 0.01, 0.95, 1000.0)


@pytest.mark.parametrize("row, named", [
    ([3.0, 0.5, 0.3], "clearance 0.3 (the sweep held it at 0.15)"),
    ([6.0, 0.5, 0.15], "length 6 (above the sampled 2..5)"),
])
def test_a_row_outside_the_box_is_refused_naming_it(held, row, named):
    with pytest.raises(ValueError, match="outside the sampled domain") as by_predict:
        held.predict([row])
    assert named in str(by_predict.value)
    inside = [3.0, 0.5, 0.15]
    with pytest.raises(ValueError, match="outside the sampled domain") as err:
        held.predict_arrays([inside, row])
    assert f"row 1: {named}" in str(err.value)
    cd, lo, hi = held.predict_arrays([inside])                  # inside: the law, bounded
    assert cd[0] == pytest.approx(1.2, rel=1e-12) and lo[0] < 1.2 < hi[0]

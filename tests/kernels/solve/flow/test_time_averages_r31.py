"""The unsteady nose's averages (round 31): over whole shedding periods, with an error.

The averages were the plain mean over the run's second half, which ends inside a period:
biased by up to ``A T / (pi L)``, with no word of the uncertainty. A signal of known mean is
the oracle."""

import numpy as np
import pytest

from skiff.kernels.solve.flow.nose_flow import time_averages

T_END, DT = 30.0, 0.02
t = np.arange(1, int(T_END / DT) + 1) * DT


def test_periodic_shedding_is_averaged_over_whole_periods():
    period = 4.3                                   # 15 / 4.3: 3.5 periods in the window
    w = 2 * np.pi / period
    cl = 0.05 + 0.8 * np.sin(w * t + 0.3)
    cd = 1.10 + 0.04 * np.sin(2 * w * t + 1.0) + 0.03 * np.cos(w * t)
    half = t >= 15.0
    plain = abs(cl[half].mean() - 0.05)
    avg = time_averages(t, cd, cl)
    assert plain > 0.01                                            # the old estimate's bias
    assert avg["cl_mean"] == pytest.approx(0.05, abs=2e-4)
    assert avg["cd_mean"] == pytest.approx(1.10, abs=2e-4)
    assert avg["error_from"] == "periods" and avg["periods"] == 3
    assert avg["period"] == pytest.approx(period, rel=1e-3)
    assert avg["st"] == pytest.approx(1 / period, rel=1e-3)
    assert avg["cd_error"] < 1e-3 and avg["cl_rms"] == pytest.approx(0.8 / np.sqrt(2), rel=0.05)


def test_the_error_covers_the_scatter_of_a_noisy_shedding():
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(40):
        w = 2 * np.pi / 1.1                       # about 13 periods in the window
        cl = 0.5 * np.sin(w * t + rng.uniform(0, 6))
        # period-to-period scatter of the drag: a slow random walk around 1.0
        cd = 1.0 + 0.01 * np.repeat(rng.standard_normal(len(t) // 25 + 1), 25)[:len(t)]
        avg = time_averages(t, cd, cl)
        hits += abs(avg["cd_mean"] - 1.0) <= 2 * avg["cd_error"]
    assert hits >= 32                             # about 95% expected within 2 errors


def test_a_settling_flow_reports_its_drift():
    cd = 1.0 + 0.2 * np.exp(-t / 8.0)            # no shedding, still falling
    cl = 0.1 * np.exp(-t / 8.0)
    avg = time_averages(t, cd, cl)
    assert avg["error_from"] == "halves"
    assert avg["cd_mean"] == pytest.approx(cd[t >= 15].mean())
    assert avg["cd_error"] > 0.2 * abs(avg["cd_mean"] - 1.0)

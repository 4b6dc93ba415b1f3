"""The periodic case run where the flow is not periodic (round 31): ``--case 2d-2 --re 20``
(below the onset of shedding near Re 46, Williamson 1996) reported ``st: null`` beside a
``cl_amplitude`` of 1.84 and a cd_max of the start-up kick's transient, with no word. Now the
result carries a note (and the job log a warning) naming why and what to run instead."""

import numpy as np
import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.solve.flow import run_case


class _Log(NullReporter):
    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append((level, message))


def test_a_steady_wake_in_the_periodic_case_is_named():
    log = _Log()
    res = run_case("2d-2", re=20.0, resolution=16, dt=0.02, t_end=1.6, keep_fields=False,
                   reporter=log)
    assert np.isnan(res.st)
    note = res.details["note"]
    assert "no periodic lift" in note and "run --case 2d-1 --re 20" in note
    assert res.to_json()["note"] == note and res.to_json()["st"] is None
    assert ("warning", note) in log.lines


def test_strouhal_counts_periods_not_wiggles():
    from skiff.kernels.solve.flow import strouhal

    t = np.linspace(0.0, 1.0, 501)
    # a monotone transient with a small kink: the run above, which gave St 8.9
    ramp = -5.0 + 4.2 * t + 0.05 * np.sin(2 * np.pi * 12 * t) * np.exp(-((t - 0.4) / 0.03) ** 2)
    assert np.isnan(strouhal(t, ramp, 0.1, 1.0))
    # shedding that grows towards its limit cycle, with noise: the period is still read
    rng = np.random.default_rng(0)
    grow = (1 - 0.6 * np.exp(-3 * t)) * np.sin(2 * np.pi * 3.0 * t) + \
        0.02 * rng.standard_normal(len(t))
    assert strouhal(t, grow, 0.1, 1.0) == \
        pytest.approx(0.3, rel=0.02)

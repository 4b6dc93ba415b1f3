"""``solve_nose(t_end=, dt=)`` (round 31): the time-marching mode's window was fixed at 30
H/U; a blunt nose at Re 1000 on its default grid (9484 cells) oscillates in lift slower than
the 15 H/U averaged (cd 1.2739 +- 0.0028, cl 9.25 +- 0.30 from the drift between the window's
halves), so a user needs a longer run, and the solve now says so in its log."""

import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.solve.flow.adapt import min_resolution
from skiff.kernels.solve.flow.nose import NoseShape
from skiff.kernels.solve.flow.nose_job import solve_nose

SHAPE = NoseShape(2.0, 0.6, 0.3)


class _Log(NullReporter):
    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append((level, message))


def test_t_end_and_dt_reach_the_march_and_an_unsettled_average_is_named():
    log = _Log()
    flow = solve_nose(shape=SHAPE, re=50.0, adapt="graded", mode="unsteady",
                      resolution=1.05 * min_resolution(SHAPE), t_end=0.8, dt=0.1,
                      reporter=log, keep=False)
    assert flow.time_steps == 8 and flow.history["t"][-1] == pytest.approx(0.8)
    assert flow.averages["error_from"] == "halves" and flow.averages["cd_error"] > 0
    # from rest, 0.8 H/U is all start-up: the average is uncertain and the log says so
    warned = [m for level, m in log.lines if level == "warning"]
    assert any("is uncertain" in m and "run longer: t_end=1.6" in m for m in warned)
    from skiff.kernels.solve.flow.nose_plots import html_view

    flow.mesh, flow.cp, flow.history = None, {}, {}          # the table only
    err = flow.averages["cd_error"]
    assert f"{flow.cd:.5g} &plusmn; {err:.2g} (time-averaged)" in html_view(flow)
    assert f"cd +- {err:.2g}" in repr(flow)


@pytest.mark.parametrize("kw, needle", [
    ({"t_end": -1.0}, "t_end must be a number > 0, got -1.0"),
    ({"dt": "fast"}, "dt must be a number > 0, got 'fast'"),
    ({"t_end": 0.1, "dt": 0.05}, "t_end 0.1 holds fewer than 4 time steps of dt 0.05"),
    ({"dt": float("nan")}, "dt must be a number > 0, got nan"),
])
def test_bad_march_times_are_refused_before_any_mesh(kw, needle):
    with pytest.raises(ValueError, match=needle):
        solve_nose(shape=SHAPE, re=50.0, adapt="graded", mode="unsteady", **kw)


def test_a_reynolds_sweep_checks_and_passes_the_march_times():
    from skiff.kernels.solve.flow.nose_job import reynolds_sweep

    with pytest.raises(ValueError, match="t_end must be a number > 0"):
        reynolds_sweep([50.0, 100.0], shape=SHAPE, t_end=0.0)
    flows = reynolds_sweep([50.0], shape=SHAPE, mode="unsteady", t_end=0.4, dt=0.1,
                           resolution=1.05 * min_resolution(SHAPE))
    assert flows[0].time_steps == 4

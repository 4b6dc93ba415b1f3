"""Honest progress: a finished solve says 100% from its last residual, the ETA comes from the
smoothed rates, the units read right, and a job's text cannot steer the terminal."""

import random

import pytest

from skiff.jobs import JobState, launch
from skiff.jobs.terminal import clean, fmt_clock, fmt_rate, live_line, plain_line
from skiff.kinds.base import figure
from skiff.kinds.solve import to_config


def test_a_finished_solve_ends_at_its_last_residual_and_100_percent():
    # 182 iterations: past 100 the solver reports every 10th, so the last report is not the
    # last iteration; the final residual must still reach the state
    config = to_config({"problem": "diffusion", "grid": (64, 64), "precond": "none",
                        "device": "cpu"})
    job = launch("solve", config).wait(120)
    assert job.status == "done", job.error
    state, result = job.state, job.result
    assert result["converged"] and result["iterations"] % 10, result["iterations"]
    assert state.unit == "decades" and state.fraction == 1.0
    assert state.done == state.total == 8.0
    assert state.message.startswith(f"it {result['iterations']}:")
    assert state.last("residual") == pytest.approx(result["relative_residual"])
    assert job.summary()["progress"] == 1.0   # what %jobs and `skiff jobs` show
    assert "100%" in plain_line(job) and "8/8 decades" in plain_line(job)


def _solve_stream(seed, iterations=400, per_it=0.03, step_time=0.05, setup=2.0, every=1):
    """Events as a solve writes them: the residual metric at step ``it``, then its progress
    in decades (a constant convergence rate), with jittered iteration times after a slow
    setup. Yields (event, true seconds left)."""
    rng = random.Random(seed)
    t = 100.0
    yield {"t": t, "type": "status", "status": "running"}, None
    t += setup
    total = per_it * iterations
    for it in range(iterations + 1):
        t += step_time * rng.uniform(0.7, 1.3) if it else 0.0
        if it % every:
            continue
        left = (iterations - it) * step_time
        yield {"t": t, "type": "metric", "name": "residual", "value": 10 ** (-per_it * it),
               "step": it}, left
        yield {"t": t + 1e-4, "type": "progress", "done": round(per_it * it, 3),
               "total": total, "unit": "decades", "message": f"it {it}"}, left


@pytest.mark.parametrize("seed, every", [(0, 1), (1, 1), (2, 10)])
def test_eta_from_a_constant_convergence_rate_is_within_20_percent(seed, every):
    state = JobState()
    checked = 0
    for event, left in _solve_stream(seed, every=every):
        state.apply(event)
        if event["type"] != "progress" or left is None or left < 2.0:
            continue
        if state.done < 0.1 * state.total:  # let a few iterations be measured first
            continue
        eta = state.eta()
        assert eta == pytest.approx(left, rel=0.2), (state.done, eta, left)
        checked += 1
    assert checked > 10
    # 0.6 decades/s, shown as seconds per decade (singular)
    assert state.rate() == pytest.approx(0.03 / 0.05, rel=0.2)
    assert fmt_rate(state.rate(), state.unit).endswith(" s/decade")


def test_a_stagnating_solve_has_no_eta_rather_than_150161_hours():
    """GMRES gaining a sliver of a decade an iteration gave "ETA 150161 h" (round 24, a
    user's probe): an estimate over an hour and over 1000 times the time so far is unknown."""
    state = JobState()
    for event, _ in _solve_stream(0, iterations=200, per_it=1e-6, step_time=0.05):
        state.apply(event)
    assert state.eta() is None
    assert "ETA" not in plain_line(_Job(state))
    quick = JobState()  # a solve converging steadily keeps its estimate
    for event, _ in _solve_stream(0, iterations=200, per_it=0.03):
        quick.apply(event)
    assert quick.eta() is not None


def test_eta_without_steps_uses_the_smoothed_rate():
    state = JobState()
    state.apply({"t": 0.0, "type": "status", "status": "running"})
    for i in range(1, 60):  # 2 images a second, 100 images in all
        state.apply({"t": i * 0.5, "type": "progress", "done": i, "total": 100,
                     "unit": "image"})
    assert state.eta() == pytest.approx((100 - 59) * 0.5, rel=0.05)
    assert state.rate() == pytest.approx(2.0, rel=0.05)


def test_rates_read_with_the_right_unit():
    assert fmt_rate(0.25, "decades") == "4 s/decade"
    assert fmt_rate(12.34, "step") == "12.3 steps/s"
    assert fmt_rate(None, "step") == ""
    assert fmt_clock(75) == "01:15" and fmt_clock(3725) == "1:02:05"
    assert [figure(v) for v in (7.3e-9, 3.31415, 1234.5, 8.0, 12)] == \
        ["7.3e-09", "3.31", "1,234", "8", "12"]


class _Job:
    """What the terminal lines read from a job (its id, kind and state)."""

    def __init__(self, state, kind="solve"):
        self.id, self.kind, self.state = "20260101-000000-solve-abcd", kind, state


def test_live_line_has_bar_rate_eta_and_metric():
    state = JobState()
    for event, _ in _solve_stream(0, iterations=100):
        state.apply(event)
        if state.done >= 1.5:
            break
    line = live_line(_Job(state), 120, now=state.started + 10)
    assert line.startswith("solve abcd  ") and "%|" in line and "|" in line
    assert "1.5/3 decades [00:10<00:0" in line and " s/decade]" in line
    assert "residual" in line and len(line) <= 120


def test_control_characters_from_a_job_are_shown_escaped():
    state = JobState()
    state.apply({"t": 1.0, "type": "status", "status": "running"})
    state.apply({"t": 2.0, "type": "progress", "done": 1, "total": 4,
                 "message": "step \x1b[2J\x1b]0;owned\x07 ok\r\n\u202eevil 今天"})
    line = plain_line(_Job(state, "demo"))
    assert "\x1b" not in line and "\x07" not in line and "\r" not in line
    assert "\u202e" not in line and "\\x1b[2J" in line and "今天" in line
    assert clean("a\nb", keep_newlines=True) == "a\nb" and clean("a\nb") == "a\\nb"

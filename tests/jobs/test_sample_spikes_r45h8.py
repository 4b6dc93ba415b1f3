"""Round 45 (h8): a long run's live chart keeps the spikes between its samples.

Past a name's first ``KEEP_FIRST`` samples, ``RunReporter.sample`` writes at most ten a
second; it kept the latest of each window alone, so a gradient norm's spike (or a
throughput's dip, a NaN of a divergence) between two written samples never reached the
events a running job's chart draws (its finished chart has the whole history). Each window
now keeps its lowest and highest value too, written with the sample that closes it.

Oracle: the values the loop gave (a flat series with a spike, a dip and a NaN at steps that
fall between samples), against the events written; a fake clock, no sleeps."""

from __future__ import annotations

import math
import time
import types

import pytest

import skiff.jobs.reporter as reporter_module
from skiff.jobs.events import read_events
from skiff.jobs.reporter import RunReporter


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    fake = types.SimpleNamespace(monotonic=lambda: now[0], strftime=time.strftime)
    monkeypatch.setattr(reporter_module, "time", fake)
    return now


def _series(path, name):
    return [(e["step"], e["value"]) for e in read_events(path / "events.jsonl")
            if e["type"] == "metric" and e["name"] == name]


def test_a_spike_a_dip_and_a_nan_between_samples_are_written(tmp_path, clock):
    rep = RunReporter(tmp_path)  # ten a second; the first KEEP_FIRST all written
    steps, dt = 2000, 0.013
    odd = {457: 50.0, 733: 0.01, 1301: float("nan")}
    given = {}
    for step in range(1, steps + 1):
        clock[0] += dt
        given[step] = odd.get(step, 1.0 + 0.001 * (step % 7))
        rep.sample("grad_norm", given[step], step=step)
        rep.progress(step, steps)
    written = _series(tmp_path, "grad_norm")
    at = dict(written)
    for step, value in odd.items():  # every step is past KEEP_FIRST and inside a window
        assert step in at, f"step {step} ({value}) missing from the chart's series"
        assert at[step] == value or (math.isnan(value) and math.isnan(at[step]))
    # only values the loop gave, in its order, the last step's with it
    assert [s for s, _ in written] == sorted(at) and len(at) == len(written)
    assert all(v == given[s] or (math.isnan(v) and math.isnan(given[s])) for s, v in written)
    assert written[-1][0] == steps
    # still thinned: the first KEEP_FIRST, then no more than ten a second (three a window)
    assert len(written) <= rep.KEEP_FIRST + (steps - rep.KEEP_FIRST) * dt / 0.1 + 3
    assert len(written) < steps / 5


@pytest.mark.parametrize("first", [float("nan"), 2.0])
def test_a_window_that_starts_with_a_nan_keeps_its_lowest(tmp_path, clock, first):
    rep = RunReporter(tmp_path)
    rep.KEEP_FIRST = 0
    rep.sample("loss_scale", 1.0, step=1)  # written: it opens the window
    for step, value in enumerate([first, 5.0, 0.5, 3.0], start=2):
        clock[0] += 0.04  # one window (0.3 s) of 0.16 s: all held until the flush
        rep.sample("loss_scale", value, step=step)
    assert len(_series(tmp_path, "loss_scale")) == 1
    rep.flush()
    values = [v for _s, v in _series(tmp_path, "loss_scale")]
    highest = [v for v in values if math.isnan(v)] if math.isnan(first) else [5.0]
    assert 0.5 in values and highest and highest[0] in values, values  # NaN the highest
    assert values[-1] == 3.0  # the latest at flush


def test_a_long_charts_thinning_keeps_the_spikes(monkeypatch):
    # the chart drew every k-th point of a long series (round 42: picked before reading):
    # at 200,000 points and 2,000 drawn, a one-step spike was drawn 1 time in 100
    from skiff.jobs.chart import metric_figure
    from skiff.jobs.series import Series

    n, most = 200_003, 2000
    odd = {777: 40.0, 123_457: -3.0, 150_001: float("inf"), 199_999: 9.0}
    series = Series((i + 1, odd.get(i + 1, 1.0 + (i % 5) * 0.01), 0.0) for i in range(n))
    read = []
    point = Series._point
    monkeypatch.setattr(Series, "_point", lambda self, i: read.append(i) or point(self, i))
    fig = metric_figure({"grad_norm": series}, max_points=most)
    line = fig.axes[0].lines[0]  # the points as drawn (a noisy one's smoothed line after)
    drawn = dict(zip(line.get_xdata(), line.get_ydata()))
    for step, value in odd.items():
        if value != float("inf"):  # a chart draws finite values only
            assert drawn.get(float(step)) == value, (step, drawn.get(float(step)))
    assert min(drawn) == 1.0 and max(drawn) == float(n)  # the whole run
    assert most // 2 <= len(drawn) <= most + 2 and len(read) <= most + 2, (len(drawn), len(read))

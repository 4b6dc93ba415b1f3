"""Round 44 (h21): a chart smoothed every monotone curve of 20 to 21 points (its mean jump,
1/19 of its span, was over the 5 % that called a series noisy), so a 20-step training's
whole lr history (a warm-up to step 2, then a cosine decay) was drawn smoothed, its peak
shown at step 4. A curve is noisy now where its path is over 4 spans (and over 0.05 (n - 1)
spans, as before for long ones). The oracle: the schedule's own peak; a jittery series of
the same length is still smoothed."""

from __future__ import annotations

import math

from skiff.jobs.chart import metric_figure


def _lr(step: int) -> float:  # warm-up over 2 steps, then a cosine decay over 18
    return 1e-3 * step / 2 if step <= 2 else 5e-4 * (1 + math.cos(math.pi * (step - 2) / 18))


def test_a_20_step_lr_is_drawn_as_it_is():
    fig = metric_figure({"lr": [(s, _lr(s), None) for s in range(1, 21)]})
    (line,) = fig.axes[0].lines  # one line, not a faint one under a smoothed one
    xs, ys = list(line.get_xdata()), list(line.get_ydata())
    assert xs == [float(s) for s in range(1, 21)]
    assert xs[ys.index(max(ys))] == 2.0 and max(ys) == 1e-3


def test_a_jittery_20_point_series_is_still_smoothed():
    jitter = [1.0 + (0.5 if s % 2 else -0.5) - 0.01 * s for s in range(1, 21)]
    fig = metric_figure({"samples_per_s": [(s, v, None) for s, v in enumerate(jitter, 1)]})
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert "samples_per_s (smoothed)" in labels, labels

"""The nose's cp plot as an aerodynamicist reads it (round 32): where the nose ends on each
side (the shoulders, at the arc length where the surface reaches the shoulder's x), the
highest cp on the nose marked with its value, the inverted axis said in its label, the Re in
the title; the grid's axes in train heights. The oracle is a surface written by hand (a
wedge's arc lengths are known) and the plotted data read back."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from skiff.kernels.solve.flow.nose import NoseShape
from skiff.kernels.solve.flow.nose_plots import cp_figure, grid_figure


def _flow():
    shape = NoseShape(3.0, 0.4, 0.15)
    # a surface along a 3 H wedge: floor side s < 0, roof side s > 0, the shoulder at x = 3
    s = np.linspace(-5.0, 5.0, 201)
    slope = np.hypot(3.0, 0.5)
    x = np.where(np.abs(s) <= slope, np.abs(s) * 3.0 / slope, 3.0 + np.abs(s) - slope)
    cp = 1.0 - 0.5 * s ** 2
    cp[30] = 1.7                  # s = -3.5: behind the floor's shoulder (in the gap): not marked
    return SimpleNamespace(shape=shape, re=250.0, mode="steady", cd=1.2, cl=0.3, cells=10,
                           adapt="graded", cp={"s": s, "x": x, "y": 0 * s, "cp": cp}), slope


def test_the_cp_plot_marks_the_shoulders_and_the_highest_cp():
    flow, slope = _flow()
    ax = cp_figure(flow).axes[0]
    shoulders = sorted(ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":")
    step = 10.0 / 200
    assert len(shoulders) == 2
    assert abs(shoulders[0] + slope) <= step and abs(shoulders[1] - slope) <= step
    names = sorted(t.get_text() for t in ax.texts)
    assert names == ["floor shoulder", "roof shoulder"]
    peak = [ln for ln in ax.get_lines() if ln.get_marker() == "v"][0]
    assert peak.get_xdata()[0] == 0.0 and peak.get_ydata()[0] == 1.0
    assert "1.000 at s = 0.000" in peak.get_label()
    assert ax.yaxis_inverted() and "inverted" in ax.get_ylabel()
    assert "Re 250" in ax.get_title()


def test_the_grid_is_in_train_heights():
    shape = NoseShape(3.0, 0.4, 0.15)
    p = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    flow = SimpleNamespace(mesh=(p, np.array([[0], [1], [2]])), shape=shape, cells=1,
                           cd=1.0, adapt="graded")
    ax = grid_figure(flow).axes[0]
    assert ax.get_xlabel() == "x / H" and ax.get_ylabel() == "y / H"

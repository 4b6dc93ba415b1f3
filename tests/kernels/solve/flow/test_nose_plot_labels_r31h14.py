"""Round 31 (h14): the train-nose field plots had no axis labels. Lengths in the nose code
are in train heights (``H = 1``, nose.py; ``NoseShape`` in train heights): each field's axes
say ``x / H`` and ``y / H``, and the view spans the shape's own length in those units."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from skiff.kernels.solve.flow.nose import NoseShape
from skiff.kernels.solve.flow.nose_plots import fields_figure


def test_field_axes_are_labelled_in_train_heights():
    shape = NoseShape(3.0, 0.4, 0.15)
    xs, ys = np.meshgrid(np.linspace(-1, 6, 8), np.linspace(0, 2, 5))
    p = np.vstack([xs.ravel(), ys.ravel()])
    tris = []
    for j in range(4):
        for i in range(7):
            a = j * 8 + i
            tris += [(a, a + 1, a + 8), (a + 1, a + 9, a + 8)]
    flow = SimpleNamespace(mesh=(p, np.array(tris).T), shape=shape, re=100.0, mode="steady",
                           fields={"speed": np.hypot(*p), "p": p[0] * 0.1})
    fig = fields_figure(flow)
    axes = [ax for ax in fig.axes if ax.get_title()]      # the two fields, not colorbars
    assert len(axes) == 2
    for ax in axes:
        assert ax.get_xlabel() == "x / H" and ax.get_ylabel() == "y / H"
        assert ax.get_xlim()[1] == shape.length + 2.5      # the nose's length, in H

"""Round 34 (h7): a resolution too coarse for a nose is refused with the one that holds it.

Before: ``solve_nose(3.5, 0.2, 0.2, adapt='graded', resolution=14)`` failed in the mesher
with "mesh size 0.119 in the gap under the floor, which needs at most 0.1" (no resolution
named), and ``sweep(3, resolution=14)`` solved one shape and failed two that way (now a
warning first, and each failure names the resolution). Oracle: the
mesher's own test (``too_coarse``, ``nose_mesh``) one step either side of the named value."""

from __future__ import annotations

import pytest

import skiff.aero
from skiff.kernels.solve.flow.adapt import graded_size, uniform_size
from skiff.kernels.solve.flow.nose import NoseShape, nose_mesh, too_coarse
from skiff.kernels.solve.flow.nose_job import needed_resolution


def test_solve_nose_names_the_resolution_that_holds_the_gap():
    shape = NoseShape(3.5, 0.2, 0.2)
    with pytest.raises(ValueError, match=r"resolution 16 is too coarse to hold the body .* "
                                         r"resolution 17 or finer holds it"):
        skiff.aero.solve_nose(3.5, 0.2, 0.2, re=200, adapt="graded", resolution=16)
    assert too_coarse(shape, graded_size(shape, 17)) is None       # 17 holds it
    with pytest.raises(ValueError, match="too coarse to hold the body"):
        nose_mesh(shape, graded_size(shape, 16))                    # the mesher refuses 16
    mesh = nose_mesh(shape, graded_size(shape, 17))
    assert mesh.t.shape[1] > 1000


@pytest.mark.parametrize("adapt,make", [("graded", graded_size), ("uniform", uniform_size)])
def test_needed_resolution_is_the_threshold(adapt, make):
    shape = NoseShape(4.0, 0.5, 0.13)
    need = needed_resolution(shape, 12, make(shape, 12))
    assert need is not None and need > 12
    assert too_coarse(shape, make(shape, need)) is None
    assert too_coarse(shape, make(shape, need - 1)) is not None
    assert needed_resolution(shape, need, make(shape, need)) is None


def test_a_sweep_says_it_before_solving():
    points = [[3.5, 0.2, 0.13], [3.0, 0.4, 0.14]]
    with pytest.warns(UserWarning, match=r"too coarse for this sweep: the thinnest gap "
                                         r"\(clearance 0\.13\) needs resolution 22 or finer"):
        out = skiff.aero.sweep(points=points, re=200, adapt="graded", resolution=14, np=1)
    assert len(out) == 0 and len(out.failed) == 2
    assert all("or finer holds it" in f["error"] for f in out.failed)
    shape = NoseShape(3.5, 0.2, 0.13)
    assert too_coarse(shape, graded_size(shape, 22)) is None
    assert too_coarse(shape, graded_size(shape, 21)) is not None

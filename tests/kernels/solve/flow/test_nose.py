"""The train nose (``%solve train-nose``): the shape against its closed forms, the mesh's
boundaries, the gap flow against the Couette-Poiseuille profile, drag against a
grid-converged reference (in test_graded_re_r29.py since round 46), and one clear error for
each bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from skiff.kernels.solve.flow.adapt import graded_size, min_resolution
from skiff.kernels.solve.flow.nose import DOMAIN, NoseShape, SizeField, nose_mesh
from skiff.kernels.solve.flow.nose_flow import solve_nose_flow
from skiff.kinds.solve import to_config

# drag against a grid-converged reference: test_graded_re_r29.py (round 46: its solves of
# that shape start from one learned flow)


def test_ellipse_nose_has_the_closed_form_area():
    """bluntness 1/6 makes the exponent 2: two quarter ellipses of semi-axes L x 0.7 and
    L x 0.3, area pi L / 4 together."""
    shape = NoseShape(length=2.5, bluntness=1 / 6, clearance=0.2)
    assert shape.exponent == pytest.approx(2.0)
    assert shape.volume() == pytest.approx(math.pi * 2.5 / 4, rel=1e-4)
    x, y = shape.outline()
    assert x.min() == pytest.approx(0.0, abs=1e-12)
    assert y.min() == pytest.approx(0.2) and y.max() == pytest.approx(1.2)
    inside = shape.inside(np.array([1.5, -0.1, 5.0, 5.0]), np.array([0.6, 0.6, 0.1, 0.9]))
    assert inside.tolist() == [True, False, False, True]


@pytest.mark.parametrize("kw, needle", [
    ({"clearance": -0.1}, "clearance must be > 0"),
    ({"length": 11.0}, "longer than the domain holds"),
    ({"bluntness": 1.5}, "bluntness must be in 0..1"),
    ({"length": "x"}, "length must be a number"),
])
def test_bad_shapes_are_one_line(kw, needle):
    with pytest.raises(ValueError, match=needle) as info:
        NoseShape(**kw)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("values, needle", [
    ({"clearance": -0.1}, "clearance must be > 0"),
    ({"length": 20}, "longer than the domain holds"),
    ({"re": 0}, "Reynolds number must be > 0"),
    ({"re": -5}, "Reynolds number must be > 0"),
    ({"adapt": "uniform", "resolution": 5}, "too coarse to hold the body"),
    ({"adapt": "magic"}, "unknown adapt 'magic'"),
])
def test_config_mistakes_are_one_line(values, needle):
    with pytest.raises(ValueError, match=needle) as info:
        to_config({"problem": "train-nose", **values})
    assert "\n" not in str(info.value)


def test_config_of_the_nose():
    cfg = to_config({"problem": "train-nose", "length": 3, "bluntness": 0.4,
                     "clearance": 0.15, "re": 1000, "adapt": "graded", "device": "auto"})
    assert cfg == {"problem": "train-nose", "length": 3.0, "bluntness": 0.4,
                   "clearance": 0.15, "re": 1000.0, "adapt": "graded", "resolution": None,
                   "flow": "auto", "device": "cpu"}


def test_a_field_too_coarse_for_the_body_is_refused():
    with pytest.raises(ValueError, match="too coarse to hold the body.*gap under the floor"):
        nose_mesh(NoseShape(clearance=0.15), SizeField.constant(0.2))


def test_mesh_boundaries_and_body():
    shape = NoseShape(3.0, 0.4, 0.3)
    mesh = nose_mesh(shape, graded_size(shape, 1.05 * min_resolution(shape)))
    assert set(mesh.boundaries) == {"inlet", "outlet", "ground", "top", "body"}
    verts = mesh.p[:, np.unique(mesh.facets[:, mesh.boundaries["body"]])]
    assert shape.body_distance(*verts).max() < 1e-3        # body vertices lie on the outline
    centres = mesh.p[:, mesh.t].mean(axis=1)
    assert not shape.inside(*centres).any()                 # no cell inside the train
    a, b = mesh.p[:, mesh.t[1]] - mesh.p[:, mesh.t[0]], mesh.p[:, mesh.t[2]] - mesh.p[:, mesh.t[0]]
    area = 0.5 * np.abs(a[0] * b[1] - a[1] * b[0]).sum()
    full = (DOMAIN["x1"] - DOMAIN["x0"]) * DOMAIN["top"]
    assert area == pytest.approx(full - (DOMAIN["x1"] - 3.0) - shape.volume(), rel=2e-3)


def test_gap_flow_is_couette_poiseuille():
    """Far behind the nose the gap under the floor is a channel with a moving wall: the
    solved profile must be ``U (1 - y/c) - (G / 2 nu) y (c - y)`` with the solved pressure
    gradient ``G`` (an independent closed form), at Re 100."""
    shape = NoseShape(3.0, 0.4, 0.3)
    flow = solve_nose_flow(shape, graded_size(shape, 1.05 * min_resolution(shape)), 100.0)
    th, st = flow.th, flow.state
    c, nu = shape.clearance, 1.0 / 100.0
    y = np.linspace(0.0, c, 11)
    x = np.full_like(y, 9.0)
    u = th.V.probes(np.vstack([x, y])) @ st.ux
    px = th.Q.probes(np.vstack([[8.5, 9.5], [c / 2, c / 2]])) @ st.p
    G = (px[1] - px[0]) / 1.0
    exact = (1 - y / c) - G / (2 * nu) * y * (c - y)
    assert np.abs(u - exact).max() < 0.01
    assert flow.mode == "steady" and abs(G) > 1e-4


def test_cli_json(runs_dir, capsys):
    """``skiff solve train-nose ... --json`` through the CLI's main, in this process (round
    46: a second interpreter cost 2-3 CPU s of imports; ``python -m skiff solve train-nose``
    as a process is tests/kinds/test_solve_nose_flag_hint_r36.py's, and ``skiff.__main__``
    is ``sys.exit(main())``)."""
    from skiff.cli import main

    capsys.readouterr()
    assert main(["solve", "train-nose", "--length", "2", "--bluntness", "0.6", "--clearance",
                 "0.3", "--re", "100", "--adapt", "graded", "--resolution", "14",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["result"]
    assert {"cd", "cl", "cells", "cp", "mode", "seconds"} <= set(doc)
    assert doc["cd"] > 0 and doc["mode"] == "steady" and doc["adapt"] == "graded"
    assert len(doc["cp"]["s"]) == len(doc["cp"]["cp"]) > 50
    assert main(["solve", "train-nose", "--clearance", "-1"]) == 2
    assert "clearance must be > 0" in capsys.readouterr().err


@pytest.mark.slow
def test_unsteady_mode_averages_the_second_half():
    """The time-marching mode: histories per step, averages over the second half (checked
    against the histories), the last step's fields kept."""
    shape = NoseShape(2.0, 0.6, 0.3)
    flow = solve_nose_flow(shape, graded_size(shape, 1.05 * min_resolution(shape)), 50.0,
                           mode="unsteady", dt=0.1, t_end=1.0)
    h = flow.history
    assert flow.mode == "unsteady" and flow.time_steps == 10 and len(h["t"]) == 10
    half = h["t"] >= 0.5
    assert flow.cd == pytest.approx(h["cd"][half].mean())
    assert flow.averages["cl_mean"] == pytest.approx(h["cl"][half].mean())
    assert np.all(np.isfinite(h["cd"])) and flow.cd > 0
    with pytest.raises(ValueError, match="mode must be"):
        solve_nose_flow(shape, graded_size(shape), 50.0, mode="fast")


def test_body_distance_matches_brute_force():
    """The k-d tree distance against every segment of the surface polyline."""
    shape = NoseShape(2.5, 0.7, 0.2)
    rng = np.random.default_rng(0)
    px, py = rng.uniform(-4, 12, 3000), rng.uniform(0, 5, 3000)
    x, y = shape._surface()
    best = np.full(px.shape, np.inf)
    for ax, ay, bx, by in zip(x[:-1], y[:-1], x[1:], y[1:]):
        dx, dy = bx - ax, by - ay
        t = np.clip(((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy), 0, 1)
        best = np.minimum(best, np.hypot(px - ax - t * dx, py - ay - t * dy))
    assert shape.body_distance(px, py) == pytest.approx(best, abs=1e-12)


def test_a_mistyped_adapt_in_the_library_says_the_closest():
    from skiff.kernels.solve.flow.nose_job import nose_size

    with pytest.raises(ValueError, match=r"unknown adapt 'lerned' \(did you mean 'learned'\?\)"):
        nose_size(NoseShape(), "lerned", 1000.0)

"""Round 30: a nose of the user's own from a CSV of points (``NoseProfile``). Oracles: the
parametric ellipse nose written out as points (in millimetres, shifted) must come back with
the ellipse's closed-form area, the same inside/outside and the same drag as the parametric
shape's own solve; a wedge has its triangle's area; bad profiles are refused with one line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skiff.kernels.solve.flow.adapt import min_resolution
from skiff.kernels.solve.flow.nose import NoseShape
from skiff.kernels.solve.flow.nose_job import solve_nose
from skiff.kernels.solve.flow.profile import NoseProfile

ELLIPSE = NoseShape(2.5, 1 / 6, 0.3)           # exponent 2: area pi L / 4


def _csv(tmp_path, pts, name="nose.csv", header="x_mm,y_mm"):
    path = tmp_path / name
    np.savetxt(path, pts, delimiter=",", header=header, comments="")
    return path


def _ellipse_mm():
    x, y = ELLIPSE.outline(241)
    return np.column_stack([x * 3900 + 500, (y - ELLIPSE.clearance) * 3900 + 77])


def test_the_ellipse_from_a_csv_in_millimetres_is_the_parametric_ellipse(tmp_path):
    prof = NoseProfile.from_csv(_csv(tmp_path, _ellipse_mm()), clearance=0.3)
    assert prof.length == pytest.approx(2.5, rel=1e-9)
    assert prof.volume() == pytest.approx(math.pi * 2.5 / 4, rel=1e-4)
    assert prof.tip == pytest.approx(ELLIPSE.tip, abs=1e-9)
    X, Y = np.meshgrid(np.linspace(-0.5, 4, 181), np.linspace(0, 1.6, 97))
    clear = ELLIPSE.body_distance(X, Y) > 2e-3          # off the outline's chords
    assert np.array_equal(prof.inside(X, Y)[clear], ELLIPSE.inside(X, Y)[clear])
    assert ELLIPSE.inside(X, Y)[clear].sum() > 1000
    # the other way round and closed (first point repeated): the same nose
    again = NoseProfile(np.vstack([_ellipse_mm()[::-1], _ellipse_mm()[-1]]), clearance=0.3)
    assert again.volume() == pytest.approx(prof.volume(), rel=1e-12)


def test_the_profile_solves_to_the_parametric_drag(tmp_path):
    prof = NoseProfile.from_csv(_csv(tmp_path, _ellipse_mm()), clearance=0.3)
    r = 1.05 * min_resolution(ELLIPSE)
    ref = solve_nose(shape=ELLIPSE, re=50.0, adapt="graded", resolution=r, keep=False)
    got = solve_nose(shape=prof, re=50.0, adapt="graded", resolution=r, keep=False)
    assert got.cd == pytest.approx(ref.cd, rel=2e-3)
    assert got.cl == pytest.approx(ref.cl, rel=2e-3)
    doc = got.to_json()
    assert doc["profile"] == "nose" and doc["bluntness"] is None and "nose" in repr(got)


def test_a_wedge_has_its_triangles_area():
    # tip at mid height, straight to the shoulder's floor and roof points (open: both ends
    # on the shoulder), in metres
    wedge = NoseProfile([(8.0, 0.0), (0.0, 2.0), (8.0, 4.0)], clearance=0.25)
    assert wedge.length == pytest.approx(2.0)
    assert wedge.volume() == pytest.approx(1.0, rel=1e-9)          # L x H / 2
    assert wedge.tip == pytest.approx((0.0, 0.75))
    assert wedge.inside(np.array([1.0, 1.0, 0.2]), np.array([0.75, 1.2, 0.3])).tolist() == \
        [True, False, False]


@pytest.mark.parametrize("points, needle", [
    ([(0, 0), (1, 1)], "at least 3 distinct points"),
    # the roof's points given out of order: the outline crosses itself
    ([(2, 0), (0, 0.5), (2, 1), (1, 0.9), (1.5, 0.2), (2, 0)], "crosses itself: segment"),
    # ends neither joined nor on the shoulder
    ([(2, 0), (0, 0.5), (1, 1)], "the profile is open"),
    # a closed ellipse: no shoulder at its rear
    ([(math.cos(t), 0.5 * math.sin(t)) for t in np.linspace(0, 2 * math.pi, 40)],
     "rear must be the shoulder"),
    ([(20.0, 0.0), (0.0, 0.5), (20.0, 1.0)], "20 train heights long"),
])
def test_bad_profiles_are_one_line_naming_the_fix(points, needle):
    with pytest.raises(ValueError, match=needle) as info:
        NoseProfile(points)
    assert "\n" not in str(info.value)


def test_csv_mistakes_and_the_learned_grid(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n0,0\n1,one\n")
    with pytest.raises(ValueError, match="bad.csv line 3"):
        NoseProfile.from_csv(bad)
    wedge = NoseProfile([(2.0, 0.0), (0.0, 0.5), (2.0, 1.0)])
    with pytest.raises(ValueError, match="adapt='graded'"):
        solve_nose(shape=wedge, re=100.0, adapt="learned")


def test_the_job_entry_takes_a_profile_file(tmp_path):
    from skiff.kernels.solve.flow.nose_job import run

    path = _csv(tmp_path, [(2.0, 0.0), (0.0, 0.5), (2.0, 1.0)], name="wedge.csv",
                header="x,y")
    flow = run({"profile": str(path), "clearance": 0.3, "re": 20.0, "adapt": "graded",
                "resolution": 1.05 * min_resolution(NoseShape(2.0, 0.5, 0.3))})
    assert flow.shape.name == "wedge" and flow.shape.volume() == pytest.approx(1.0)
    assert flow.mode == "steady" and flow.cd > 0

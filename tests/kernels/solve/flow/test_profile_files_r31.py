"""Profile files as users write them (round 31): Excel's "CSV UTF-8" (a byte-order mark),
European spreadsheets (semicolons, decimal commas), tab-separated, airfoil-style ``.dat``
(a name line, columns split by spaces), CAD sections with a constant third coordinate. Each is
read to the points that were written (numpy's own formatting of them is the oracle); a first
row with a typo is refused with its line number instead of being dropped as a header."""

import numpy as np
import pytest

from skiff.kernels.solve.flow.profile import NoseProfile, _read_csv

T = np.linspace(-np.pi / 2, np.pi / 2, 31)
PTS = np.column_stack([3000.0 - 3000.0 * np.cos(T), 500.0 + 500.0 * np.sin(T)])   # mm


def _write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


def _rows(fmt, sep):
    return "\n".join(sep.join(fmt % v for v in row) for row in PTS) + "\n"


@pytest.mark.parametrize("name, text", [
    ("excel.csv", "\ufeff" + _rows("%.15g", ",")),                  # no header: the BOM
    ("excel_header.csv", "\ufeffx [mm],y [mm]\n" + _rows("%.15g", ",")),
    ("europe.csv", "x;y\n" + _rows("%.15g", ";").replace(".", ",")),
    ("semicolons.csv", _rows("%.15g", ";")),
    ("tabs.tsv", "x\ty\n" + _rows("%.15g", "\t")),
    ("selig.dat", "MY NOSE 2026\n" + _rows("%16.10f", "  ")),
    ("trailing.csv", "x,y,\n" + _rows("%.15g", ",").replace("\n", ",\n")),
    ("windows.csv", "x,y\r\n" + _rows("%.15g", ",").replace("\n", "\r\n")),
])
def test_every_common_layout_reads_the_points_written(tmp_path, name, text):
    got = _read_csv(_write(tmp_path, name, text))
    assert got.shape == PTS.shape
    np.testing.assert_allclose(got, PTS, rtol=0, atol=1e-7)
    ref = NoseProfile(PTS)
    prof = NoseProfile.from_csv(tmp_path / name)
    assert prof.length == pytest.approx(ref.length, abs=1e-9)
    np.testing.assert_allclose(np.column_stack(prof.outline()),
                               np.column_stack(ref.outline()), atol=1e-9)


def test_a_cad_section_with_a_constant_coordinate(tmp_path):
    xz = np.column_stack([PTS[:, 0], np.full(len(PTS), 1200.0), PTS[:, 1]])   # x, y=1200, z
    got = _read_csv(_write(tmp_path, "cad.csv", "x,y,z\n" + "\n".join(
        ",".join(repr(float(v)) for v in r) for r in xz)))
    np.testing.assert_array_equal(got, PTS)
    varied = xz.copy()
    varied[:, 1] += np.arange(len(PTS))
    with pytest.raises(ValueError, match="three columns, and none of them constant"):
        _read_csv(_write(tmp_path, "twisted.csv", "\n".join(
            ",".join(repr(float(v)) for v in r) for r in varied)))


@pytest.mark.parametrize("text, needle", [
    ("3000,0.0.0\n" + _rows("%.15g", ",").split("\n", 1)[1],
     "bad.csv line 1: '3000,0.0.0' is not two"),
    ("x,y\n1,2\n3,4,5\n", "bad.csv line 3: 3 numbers, a profile row is two"),
    ("x,y\n1,2\n3,four\n", "bad.csv line 3"),
    ("x,y\nnothing here\n", "bad.csv: no rows of numbers"),
    ("1\n2\n", "bad.csv line 1: 1 numbers"),
])
def test_a_bad_first_row_is_named_not_taken_for_a_header(tmp_path, text, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(".", r"\.")) as e:
        _read_csv(_write(tmp_path, "bad.csv", text))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("closed", [False, True])
def test_a_nose_drawn_pointing_to_plus_x_is_mirrored(closed):
    """A rail CAD's x often runs in the direction of travel: the shoulder at the smallest x.
    It was refused as "open ... not both on the shoulder"; mirrored, it is the same nose."""
    pts = PTS if not closed else np.vstack([PTS, PTS[:1]])
    ahead = pts * np.array([-1.0, 1.0]) + np.array([7000.0, 0.0])
    ref, got = NoseProfile(pts), NoseProfile(ahead)
    assert got.length == pytest.approx(ref.length, abs=1e-12)
    np.testing.assert_allclose(np.column_stack(got.outline()),
                               np.column_stack(ref.outline()), atol=1e-12)
    assert got.volume() == pytest.approx(ref.volume(), rel=1e-12)


def test_a_profile_with_no_full_height_end_is_still_refused():
    bump = np.array([(0.0, 0.0), (1.0, 0.2), (2.0, 0.0), (1.0, 1.0), (0.0, 0.0)])  # closed
    with pytest.raises(ValueError, match="rear must be the shoulder"):
        NoseProfile(bump)

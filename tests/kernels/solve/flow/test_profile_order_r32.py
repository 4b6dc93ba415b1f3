"""Profile files as CAD exports give them (round 32): the outline's points in no order (a
point cloud), its segments each written with both ends, rows sorted by ``x``, a nose drawn
pointing to +x, a closed outline with points on the rear line, millimetres and a header. The
oracle is the outline written in order (the same points) and the ellipse's area ``pi L H / 4``;
an order that two independent rules do not agree on is still refused."""

import math

import numpy as np
import pytest

from skiff.kernels.solve.flow.profile import NoseProfile

H, L = 3800.0, 3 * 3800.0                                        # mm: a 3 H ellipse nose
T = np.linspace(-np.pi / 2, np.pi / 2, 61)
PTS = np.column_stack([L * (1 - np.cos(T)), H / 2 * (1 + np.sin(T))])
RNG = np.random.default_rng(7)


def _csv(tmp_path, name, pts):
    path = tmp_path / name
    path.write_text("x [mm],y [mm]\n" + "".join(f"{a:.4f},{b:.4f}\n" for a, b in pts))
    return path


def _segments(order):
    return np.concatenate([PTS[[i, i + 1]] for i in order])


CASES = {
    "cloud.csv": PTS[RNG.permutation(len(PTS))],
    "segments.csv": _segments(RNG.permutation(len(PTS) - 1)),     # both ends, shuffled
    "sorted_x.csv": PTS[np.lexsort((PTS[:, 1], PTS[:, 0]))],
    "pointing_x.csv": (PTS * [-1, 1])[RNG.permutation(len(PTS))],
    "closed_rear.csv": np.vstack([PTS, [[L, y] for y in np.linspace(H, 0, 7)[1:-1]]])[
        RNG.permutation(len(PTS) + 5)],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_points_in_no_order_read_as_the_outline_written(tmp_path, name):
    ref = NoseProfile.from_csv(_csv(tmp_path, "ordered.csv", PTS), clearance=0.2)
    with pytest.warns(UserWarning, match="not in order along the outline") as rec:
        prof = NoseProfile.from_csv(_csv(tmp_path, name, CASES[name]), clearance=0.2)
    assert "\n" not in str(rec[0].message) and prof.reordered and not ref.reordered
    assert prof.length == pytest.approx(3.0, abs=1e-9)
    np.testing.assert_allclose(np.column_stack(prof.outline()),
                               np.column_stack(ref.outline()), atol=1e-8)
    # the area: the written polygon's (shoelace, in H^2), and near the ellipse's pi L H / 4
    x, y = PTS[:, 0] / H, PTS[:, 1] / H
    shoelace = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    assert prof.volume() == pytest.approx(shoelace, rel=1e-7)        # the file: 4 decimals, mm
    assert prof.volume() == pytest.approx(math.pi * 3 / 4, rel=1e-3)
    assert prof.tip == pytest.approx((0.0, 0.7), abs=1e-9)


def test_points_in_order_are_read_without_a_warning(tmp_path, recwarn):
    prof = NoseProfile.from_csv(_csv(tmp_path, "ordered.csv", np.vstack([PTS, PTS[:1]])))
    assert not prof.reordered and not [w for w in recwarn if "order" in str(w.message)]


@pytest.mark.parametrize("points, needle, why", [
    # a closed polygon (its last point repeating its first) is an outline drawn: its order
    # is the user's, a crossing is refused (round 30's example)
    ([(2, 0), (0, 0.5), (2, 1), (1, 0.9), (1.5, 0.2), (2, 0)], "crosses itself: segment",
     "read in the order given"),
    # no roof shoulder at all
    ([(2, 0), (0, 0.5), (1, 1)], "the profile is open", "could not be put in order"),
])
def test_an_order_not_given_and_not_found_is_refused_in_one_line(points, needle, why):
    with pytest.raises(ValueError, match=needle) as info:
        NoseProfile(points)
    assert why in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("length, bluntness, n", [(6.0, 1.0, 200), (3.0, 1.0, 40),
                                                  (6.0, 0.0, 15), (10.0, 1.0, 400)])
def test_coarse_and_uneven_outlines_are_put_in_order(length, bluntness, n):
    # the parametric outline's points (steps from 0.003 to 1.6 H: the nearest-neighbour chain
    # jumps across the tip), shuffled: the angle order is the outline
    from skiff.kernels.solve.flow.nose import NoseShape

    x, y = NoseShape(length, bluntness, 0.2).outline(n)
    pts = np.column_stack([x, y])
    ref = NoseProfile(pts, clearance=0.2)
    with pytest.warns(UserWarning, match="not in order"):
        prof = NoseProfile(pts[RNG.permutation(len(pts))], clearance=0.2)
    np.testing.assert_allclose(np.column_stack(prof.outline()),
                               np.column_stack(ref.outline()), atol=1e-12)


def test_the_plot_shows_the_outline_over_the_files_points(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    with pytest.warns(UserWarning):
        prof = NoseProfile.from_csv(_csv(tmp_path, "cloud.csv", CASES["pointing_x.csv"]))
    fig = prof.plot()
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    pts = lines["file's points (61)"]
    # the file's points, scaled and mirrored as the outline, lie on it (the outline's own
    # vertices include them)
    ox, oy = prof.outline()
    got = np.column_stack([pts.get_xdata(), pts.get_ydata()])
    d = np.min(np.hypot(got[:, :1] - ox, got[:, 1:] - oy), axis=1)
    assert d.max() < 1e-6
    assert "points put in order" in ax.get_title()
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_job_says_the_points_were_put_in_order_in_its_log(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from skiff.kernels.solve.flow import nose_job

    got = {}

    def fake(*args, shape=None, **kw):
        got["shape"] = shape
        return SimpleNamespace(cd=1.0, cl=0.0, cells=1, dofs=1, mode="steady", history={})

    class Reporter:
        logs = []

        def log(self, message, level="info"):
            self.logs.append((level, message))

        def info(self, **kw):
            pass

    monkeypatch.setattr(nose_job, "solve_nose", fake)
    path = _csv(tmp_path, "cloud.csv", CASES["cloud.csv"])
    rep = Reporter()
    with pytest.warns(UserWarning, match="not in order"):
        nose_job.run({"profile": str(path), "clearance": 0.2, "re": 50.0, "adapt": "graded"},
                     rep)
    assert got["shape"].reordered and got["shape"].length == pytest.approx(3.0)
    assert [m for lv, m in rep.logs if lv == "warning" and "not in order" in m]


def _eu(v):
    return repr(float(v)).replace(".", ",")


@pytest.mark.parametrize("name, text", [
    # every cell quoted (RFC 4180 CSV, as LibreOffice's "quote all text cells" writes it)
    ("quoted.csv", '"x [mm]","y [mm]"\n' + "".join(f'"{float(a)!r}","{float(b)!r}"\n'
                                                  for a, b in PTS)),
    # quoted with decimal commas, comma-separated
    ("quoted_eu.csv", '"x","y"\n' + "".join(f'"{_eu(a)}","{_eu(b)}"\n' for a, b in PTS)),
    ("quoted_semicolons.csv", '"x";"y"\n' + "".join(f'"{_eu(a)}";"{_eu(b)}"\n'
                                                   for a, b in PTS)),
])
def test_quoted_cells_read_the_points_written(tmp_path, name, text):
    from skiff.kernels.solve.flow.profile import _read_csv

    path = tmp_path / name
    path.write_text(text)
    np.testing.assert_array_equal(_read_csv(path), PTS)


def test_a_non_finite_row_is_named_by_its_line(tmp_path):
    path = tmp_path / "nan.csv"
    path.write_text("x,y\n" + "".join(f"{a},{b}\n" for a, b in PTS[:5]) + "nan,3\n")
    with pytest.raises(ValueError, match=r"nan.csv line 7: 'nan,3' is not finite"):
        NoseProfile.from_csv(path)

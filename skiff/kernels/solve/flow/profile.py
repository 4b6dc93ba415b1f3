"""A nose of the user's own: ``NoseProfile``, the section's outline given as points (a CSV of
``x, y`` rows or an array), in any unit of length.

The points are the outline of the nose section in order (either way round): a closed
polygon (the last point repeating the first, or not), or an open curve whose two ends lie
on the shoulder (its largest ``x``, one at the floor, one at the roof). Its rear must be the
shoulder: the full height at the largest ``x``, where the straight body runs on to the outlet
(:mod:`.nose`); a nose drawn pointing to +x (its shoulder at the smallest x) is mirrored.
Lengths are divided by the profile's height (the train height ``H = 1``), the
tip (smallest ``x``) is put at ``x = 0`` and the floor at ``clearance``.

A profile that crosses itself, one that is open elsewhere than at the shoulder, one with
fewer than three points, or with a rear that is not the full height is refused with a line
naming the fix. The learned grid knows the parametric shapes only: a profile is solved on a
``graded``, ``uniform`` or ``estimator`` grid.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .nose import LIMITS, NoseShape

__all__ = ["NoseProfile"]

SEGMENT = 0.05          # longest segment of the outline after resampling (train heights)


def _crossings(x, y):
    """Pairs ``(i, j, px, py)`` of non-adjacent segments of the closed polygon that cross."""
    n = len(x)
    ax, ay = x, y
    bx, by = np.roll(x, -1), np.roll(y, -1)
    dx, dy = bx - ax, by - ay
    out = []
    for i in range(n):
        j = np.arange(i + 2, n)
        if i == 0:
            j = j[j != n - 1]
        if len(j) == 0:
            continue
        den = dx[i] * dy[j] - dy[i] * dx[j]
        ok = np.abs(den) > 1e-14
        ex, ey = ax[j] - ax[i], ay[j] - ay[i]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (ex * dy[j] - ey * dx[j]) / den
            u = (ex * dy[i] - ey * dx[i]) / den
        hit = ok & (t > 1e-12) & (t < 1 - 1e-12) & (u > 1e-12) & (u < 1 - 1e-12)
        for k in np.flatnonzero(hit):
            out.append((i, int(j[k]), float(ax[i] + t[k] * dx[i]), float(ay[i] + t[k] * dy[i])))
    return out


def _cells(text: str) -> list[str]:
    """One line's cells: ``;``-separated (a decimal comma then allowed: ``0,5;1,2``, as a
    European spreadsheet writes), else ``,``-separated, else by whitespace (tabs, or the
    columns of an airfoil-style ``.dat`` file)."""
    import csv

    if ";" in text:
        cells = [c.replace(",", ".") for c in next(csv.reader([text], delimiter=";"))]
    elif "," in text:
        # csv's rules: a quoted cell may hold a comma ("1,5" from a spreadsheet that quotes
        # every cell and writes decimal commas)
        cells = next(csv.reader([text]))
        if any("," in c for c in cells):
            cells = [c.replace(",", ".") for c in cells]
    else:
        cells = text.split()
    return [c.strip().strip("'\"").strip() for c in cells if c.strip().strip("'\"").strip()]


def _number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _read_csv(path) -> np.ndarray:
    """The ``x, y`` rows of a profile file. Separators: commas, semicolons (with decimal
    commas), tabs or spaces; a UTF-8 byte-order mark (Excel's "CSV UTF-8") is dropped; lines
    before the first row of numbers that hold a word are headers (a name line such as
    ``NACA 2412``, a ``x [mm], y [mm]`` line), one without (``0.0.1, 2``) is refused; ``#``
    starts a comment line. Three columns are read when one of them is constant (a section
    exported from CAD with its plane's coordinate): the other two, in order. Any other line
    is refused with its number."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no profile file at {str(path)!r}")
    rows, lines = [], []
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for line, text in enumerate(f, 1):
            text = text.strip()
            if not text or text.startswith("#"):
                continue
            cells = _cells(text)
            if not rows and any(not _number(c) and any(ch.isalpha() for ch in c)
                                for c in cells):
                continue                              # a header line: a word in it
            try:
                values = [float(c) for c in cells]
            except ValueError:
                raise ValueError(f"{path.name} line {line}: {text!r} is not two numbers "
                                 "x, y") from None
            if len(values) not in (2, 3) or (rows and len(values) != len(rows[0])):
                want = len(rows[0]) if rows else 2
                raise ValueError(f"{path.name} line {line}: {len(values)} numbers, a "
                                 f"profile row is {'two: x, y' if want == 2 else 'three'}"
                                 + ("" if rows else " (or three, one of them constant)"))
            if not all(math.isfinite(v) for v in values):
                raise ValueError(f"{path.name} line {line}: {text!r} is not finite (a point "
                                 "needs two numbers x, y)")
            rows.append(values)
            lines.append(line)
    if not rows:
        raise ValueError(f"{path.name}: no rows of numbers x, y (separated by commas, "
                         "semicolons, tabs or spaces)")
    p = np.asarray(rows, float)
    if p.shape[1] == 3:
        flat = [k for k in range(3) if np.ptp(p[:, k]) <= 1e-9 * max(np.ptp(p), 1e-300)]
        if len(flat) != 1:
            raise ValueError(f"{path.name}: three columns, and {len(flat) or 'none'} of them "
                             "constant; a profile is a plane section: give x, y (or three "
                             "columns with the plane's coordinate constant)")
        p = np.delete(p, flat[0], axis=1)
    return p


def _shoulder(x, y, at: float, height: float):
    """Indices of the points at ``x = at`` on the floor (lowest y) and on the roof (highest
    y), each None where there is none."""
    rear = np.abs(x - at) <= 1e-3 * height
    out = []
    for level in (y.min(), y.max()):
        hit = np.flatnonzero(rear & (np.abs(y - level) <= 1e-3 * height))
        out.append(int(hit[0]) if len(hit) else None)
    return tuple(out)


class _OrderError(ValueError):
    """The points, in the order given, are not an outline (open elsewhere than at the
    shoulder, or crossing themselves)."""


def _unique(p, size: float):
    """The points without repeats (anywhere in the list, to 1e-9 of the profile's size), in
    the order of their first appearance."""
    key = np.round(p / (1e-9 * size)).astype(np.int64)
    _, first = np.unique(key, axis=0, return_index=True)
    return p[np.sort(first)]


def _simple_path(q):
    """Whether the open path ``q`` (floor's shoulder to roof's), closed by the rear line,
    crosses itself nowhere."""
    return not _crossings(q[:, 0], q[:, 1])


def _put_in_order(p):
    """The outline's points in order from the floor's shoulder through the tip to the roof's,
    for points given in no order (a CAD export's point cloud, its segments each with both
    ends, rows sorted by ``x``), or None when that is not unambiguous. The order is by angle
    about the middle of the shoulder (a nose is seen from there once in every direction); it
    must make an outline that crosses itself nowhere, and a nearest-neighbour chain from the
    floor's shoulder, where it makes an outline too (not on a long straight floor given by its
    two ends, nor where the tip's two sides are closer than the points along them), must be
    the same one. Points on the rear line between the shoulder's two ends are dropped (the
    body runs on there)."""
    size = float(max(np.ptp(p[:, 0]), np.ptp(p[:, 1])))
    q = _unique(p, size)
    x, y = q[:, 0], q[:, 1]
    height = float(np.ptp(y))
    ends = [(at, sign, *_shoulder(x, y, at, height))
            for at, sign in ((x.max(), 1.0), (x.min(), -1.0))]
    ends = [e for e in ends if None not in e]
    if not ends:
        return None
    at, sign, floor, roof = ends[0]
    rear = (np.abs(x - at) <= 1e-3 * height)
    rear[[floor, roof]] = False
    keep = ~rear
    idx = np.flatnonzero(keep)
    q, floor, roof = q[keep], int(np.searchsorted(idx, floor)), int(np.searchsorted(idx, roof))
    if len(q) < 3:
        return None
    u, v = sign * (at - q[:, 0]), q[:, 1] - 0.5 * (q[:, 1].min() + q[:, 1].max())
    ang = np.arctan2(v, np.maximum(u, 0.0))
    ang[floor], ang[roof] = -np.pi, np.pi
    by_angle = np.argsort(ang, kind="stable")
    chain, free = [floor], np.ones(len(q), bool)
    free[floor] = False
    for _ in range(len(q) - 1):
        d = np.hypot(*(q - q[chain[-1]]).T)
        d[~free] = np.inf
        k = int(np.argmin(d))
        chain.append(k)
        free[k] = False
    chain = np.asarray(chain)
    out = q[by_angle]
    if not _simple_path(out):
        return None
    if chain[-1] == roof and _simple_path(q[chain]) and not np.array_equal(chain, by_angle):
        return None                            # two outlines through the points: ambiguous
    return out


def _normalise(points, clearance: float):
    """The outline from the floor's shoulder through the tip to the roof's, in train
    heights, the nose length, and a note when the points had to be put in order; raises
    ``ValueError`` naming what is wrong."""
    p = np.asarray(points, dtype=float)
    if p.ndim == 2 and p.shape[1] == 2 and np.all(np.isfinite(p)) and len(p) >= 3:
        try:
            return (*_normalise_ordered(p, clearance), None)
        except _OrderError as err:
            size = max(float(np.ptp(p[:, 0])), float(np.ptp(p[:, 1])), 1e-300)
            if np.hypot(*(p[0] - p[-1])) <= 1e-6 * size:
                raise _OrderError(f"{err} (a closed outline, its last point repeating its "
                                  "first, is read in the order given)") from None
            q = _put_in_order(p)
            if q is None:
                raise _OrderError(f"{err}; the points could not be put in order unambiguously "
                                  "either (by angle about the shoulder's middle, checked by "
                                  "nearest neighbours)") from None
            outline, length = _normalise_ordered(q, clearance)
            return outline, length, (
                f"the profile's {len(p)} points were not in order along the outline (joined "
                f"as given, {'they cross' if 'crosses' in str(err) else 'its ends are apart'}); "
                f"read in order from the floor's shoulder through the tip to the roof's "
                f"({len(q)} distinct points): check the outline (`profile.plot()`)")
    return (*_normalise_ordered(p, clearance), None)


def _normalise_ordered(points, clearance: float):
    """:func:`_normalise` for points in order along the outline."""
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"a profile is rows of two numbers x, y; got an array of shape "
                         f"{p.shape}")
    if not np.all(np.isfinite(p)):
        bad = int(np.flatnonzero(~np.isfinite(p).all(axis=1))[0])
        raise ValueError(f"profile point {bad} is not finite: {p[bad].tolist()}")
    keep = np.ones(len(p), bool)
    keep[1:] = np.hypot(*np.diff(p, axis=0).T) > 0          # repeated points
    p = p[keep]
    height = float(np.ptp(p[:, 1])) if len(p) else 0.0
    if len(p) < 3 or height <= 0 or np.ptp(p[:, 0]) <= 0:
        raise ValueError(f"a profile needs at least 3 distinct points spanning a height and "
                         f"a length, got {len(p)}")
    tol = 1e-6 * max(height, float(np.ptp(p[:, 0])))
    closed = np.hypot(*(p[0] - p[-1])) <= tol
    if closed:
        p = p[:-1]
    x, y = p[:, 0], p[:, 1]
    floor, roof = _shoulder(x, y, x.max(), height)
    if floor is None or roof is None:
        # a nose drawn pointing to +x (the direction of travel): its shoulder is at the
        # smallest x; mirrored, it is the model's nose (the tip upstream, at the smallest x)
        f2, r2 = _shoulder(x, y, x.min(), height)
        if f2 is not None and r2 is not None:
            p = p * np.array([-1.0, 1.0])
            x, y = p[:, 0], p[:, 1]
            floor, roof = f2, r2
    xmax, ylo, yhi = x.max(), y.min(), y.max()
    if not closed:
        ends_on_shoulder = {0, len(p) - 1} == {floor, roof} if floor is not None and \
            roof is not None else False
        if not ends_on_shoulder:
            gap = float(np.hypot(*(p[0] - p[-1])))
            raise _OrderError(
                f"the profile is open: its ends {p[0].tolist()} and {p[-1].tolist()} are "
                f"{gap:.3g} apart and not both on the shoulder; close it (repeat the first "
                "point at the end) or end its two sides at the shoulder (the largest x), one "
                "at the floor and one at the roof")
    cross = _crossings(x, y)
    if cross:
        i, j, cx, cy = cross[0]
        raise _OrderError(f"the profile crosses itself: segment {i} ({p[i].tolist()} -> "
                         f"{p[(i + 1) % len(p)].tolist()}) crosses segment {j} at "
                         f"({cx:.4g}, {cy:.4g}); give the points in order along the outline")
    if floor is None or roof is None:
        raise ValueError("the profile's rear must be the shoulder: points at its largest x "
                         f"({xmax:.4g}) at both its lowest ({ylo:.4g}) and highest "
                         f"({yhi:.4g}) y, where the straight body runs on to the outlet")
    # the path from the floor's shoulder point to the roof's that passes the tip
    n = len(p)
    fwd = [(floor + k) % n for k in range((roof - floor) % n + 1)]
    back = [(floor - k) % n for k in range((floor - roof) % n + 1)]
    tip = int(np.argmin(x))
    path = fwd if tip in fwd else back
    ox, oy = (x[path] - x.min()) / height, (y[path] - ylo) / height + clearance
    length = float(ox.max())
    lo, hi = LIMITS["length"]
    if not lo <= length <= hi:
        raise ValueError(f"the profile's nose is {length:.3g} train heights long (length / "
                         f"height); the model holds {lo:g}..{hi:g}")
    return _resample(ox, oy), length


def _resample(x, y):
    """The polyline with every segment cut to at most ``SEGMENT`` (its corners kept)."""
    xs, ys = [x[:1]], [y[:1]]
    for k in range(1, len(x)):
        n = max(1, math.ceil(math.hypot(x[k] - x[k - 1], y[k] - y[k - 1]) / SEGMENT))
        t = np.arange(1, n + 1) / n
        xs.append(x[k - 1] + t * (x[k] - x[k - 1]))
        ys.append(y[k - 1] + t * (y[k] - y[k - 1]))
    return np.concatenate(xs), np.concatenate(ys)


@dataclass(frozen=True, init=False, eq=False, repr=False)
class NoseProfile(NoseShape):
    """A nose given by its outline's points (see the module); ``NoseProfile(points,
    clearance=0.15)`` or :meth:`from_csv`. ``length`` is read from the profile; ``bluntness``
    is NaN (no parameter describes it)."""

    points: tuple = ()
    name: str = "profile"

    def __init__(self, points, clearance: float = 0.15, name: str = "profile"):
        (ox, oy), length, note = _normalise(points, float(clearance)
                                            if _is_number(clearance) else 0.15)
        object.__setattr__(self, "points", tuple(map(tuple, np.asarray(points, float))))
        object.__setattr__(self, "name", str(name))
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "bluntness", 0.5)           # checked as a number below
        object.__setattr__(self, "clearance", clearance)
        NoseShape.__post_init__(self)
        object.__setattr__(self, "bluntness", float("nan"))
        if self.clearance != float(clearance):
            (ox, oy), _, _ = _normalise(points, self.clearance)
        object.__setattr__(self, "_outline", (ox, oy))
        object.__setattr__(self, "reordered", note is not None)
        if note:
            warnings.warn(f"{self.name}: {note}", UserWarning, stacklevel=2)

    @classmethod
    def from_csv(cls, path, clearance: float = 0.15, name: str | None = None):
        """The profile in a file of ``x, y`` rows: commas, semicolons, tabs or spaces; header
        lines skipped (see :func:`_read_csv`)."""
        return cls(_read_csv(path), clearance, name or Path(path).stem)

    polyline = True                  # the mesh joins the outline's points by straight lines

    @property
    def exponent(self) -> float:
        return float("nan")

    @property
    def tip(self) -> tuple:
        ox, oy = self._outline
        k = int(np.argmin(ox))
        return (float(ox[k]), float(oy[k]))

    def outline(self, n: int = 241):
        """The outline's points (resampled once; ``n`` is ignored)."""
        return self._outline

    def inside(self, px, py):
        from matplotlib.path import Path as MplPath

        px, py = np.asarray(px, dtype=float), np.asarray(py, dtype=float)
        ox, oy = self._outline
        poly = MplPath(np.column_stack([ox, oy]))
        in_nose = poly.contains_points(np.column_stack([px.ravel(), py.ravel()])) \
            .reshape(px.shape)
        c = self.clearance
        return np.where(px >= self.length, (py >= c) & (py <= c + 1.0), in_nose)

    def plot(self, ax=None):
        """The outline as read (train heights, the floor at ``clearance``, the ground at 0)
        over the file's points (scaled the same way), the tip and the shoulder marked: the
        figure to check a CAD export against before a solve."""
        import matplotlib.pyplot as plt

        if ax is None:
            fig, ax = plt.subplots(figsize=(7, 3))
        else:
            fig = ax.figure
        ox, oy = self._outline
        p = np.asarray(self.points, float)
        height = float(np.ptp(p[:, 1]))
        scale = 1.0 / height
        px = (p[:, 0] - p[:, 0].min()) * scale
        if None in _shoulder(p[:, 0], p[:, 1], p[:, 0].max(), height):
            px = (p[:, 0].max() - p[:, 0]) * scale          # drawn pointing to +x: mirrored
        py = (p[:, 1] - p[:, 1].min()) * scale + self.clearance
        ax.plot(ox, oy, "-", color="C0", lw=1.5, label=f"outline read ({len(ox)} points)")
        ax.plot([ox[0], ox[-1]], [oy[0], oy[-1]], ":", color="C0", lw=1, label="shoulder")
        ax.plot(px, py, "o", ms=3, mfc="none", color="C1",
                label=f"file's points ({len(p)})")
        ax.plot(*self.tip, "v", color="C3", label="tip")
        ax.axhline(0.0, color="0.3", lw=2, label="ground")
        ax.set_aspect("equal")
        ax.set_xlabel("x / H (from the tip)")
        ax.set_ylabel("y / H (above the ground)")
        ax.set_title(f"{self.name}: length {self.length:.4g} H, clearance {self.clearance:g} H"
                     + (" (points put in order)" if self.reordered else ""))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
        fig.tight_layout()
        return fig

    def to_dict(self) -> dict:
        return {"length": self.length, "bluntness": None, "clearance": self.clearance,
                "profile": self.name}

    def __eq__(self, other):
        return isinstance(other, NoseProfile) and other.points == self.points and \
            other.clearance == self.clearance

    def __hash__(self):
        return hash((self.points, self.clearance))

    def __repr__(self):
        return (f"NoseProfile({self.name!r}: {len(self.points)} points, length "
                f"{self.length:.4g}, clearance {self.clearance:g})")


def _is_number(v) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False

"""The train nose: a 2D longitudinal section of a train head near the ground, in the train's
frame (the air and the ground move at ``U = 1``, the train stands still).

Lengths are in train heights ``H = 1``. The train's floor is at ``y = clearance`` above the
ground ``y = 0``, its roof at ``clearance + 1``. The nose runs from its tip ``x = 0`` to the
shoulder ``x = length``; its outline is a superellipse of exponent
``m = 1.5 + 3 * bluntness`` (``m = 2``: an ellipse; larger: a blunter face)::

    x = length (1 - |cos t|^(2/m)),   y = y_tip + a |sin t|^(2/m) sign(sin t),  -pi/2 <= t <= pi/2

with the tip at ``y_tip = clearance + 0.3`` (``a = 0.7`` above it, ``0.3`` below: a low tip
and a long sloping roof, like a high-speed train's). Behind the shoulder the body runs on
straight to the outlet: this is the head of a long train, not a whole one.

The domain is ``[-4, 12] x [0, 5]``: uniform inflow ``u = (1, 0)`` at the inlet, the ground a
wall moving at ``u = (1, 0)``, the top a far field with ``u = (1, 0)``, do-nothing at the
outlet. ``Re = U H / nu``. The coefficients are per unit span, referred to the height:
``cd = F_x / (1/2 rho U^2 H)``, ``cl = F_y / (1/2 rho U^2 H)``, ``cp = (p - p_inf) / (1/2 rho
U^2)`` with ``p_inf`` the mean pressure on the inlet. **A 2D laminar proxy**: a real train
runs at ``Re ~ 10^7`` in turbulent 3D flow; this model keeps the geometry's effects
(stagnation at the tip, acceleration over the roof, the gap flow under the floor, separation
behind a blunt face) at Reynolds numbers a laminar 2D solve can hold (up to a few thousand).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import asdict, dataclass

import numpy as np

from .mesh import GMSH_LOCK, gmsh_start, gmsh_triangles

__all__ = ["NoseShape", "DOMAIN", "nose_mesh", "SizeField", "tag_nose_boundaries",
           "LIMITS", "check_re"]

# the domain (train heights): inlet, outlet, top (the ground is y = 0)
DOMAIN = {"x0": -4.0, "x1": 12.0, "top": 5.0}
TIP_HEIGHT = 0.3            # tip above the floor
MIN_STRAIGHT = 2.0          # straight body kept between the shoulder and the outlet
# what the parameters may be (clearance and bluntness: the model's range; length: the domain)
LIMITS = {"length": (0.5, DOMAIN["x1"] - MIN_STRAIGHT), "bluntness": (0.0, 1.0),
          "clearance": (0.02, 1.0)}
MAX_RE = 5000.0


def check_re(re) -> float:
    try:
        if isinstance(re, bool):                 # True would be Re 1
            raise TypeError
        value = float(re)
    except (TypeError, ValueError):
        raise ValueError(f"Reynolds number must be a number > 0, got {re!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"Reynolds number must be a finite number > 0, got {re!r}")
    if not value > 0:
        raise ValueError(f"Reynolds number must be > 0, got {re!r}")
    if value > MAX_RE:
        raise ValueError(f"Reynolds number {value:g} is beyond what a laminar 2D solve holds "
                         f"(at most {MAX_RE:g})")
    return value


@dataclass(frozen=True)
class NoseShape:
    """The nose's three shape parameters (in train heights), checked on creation."""

    length: float = 3.0
    bluntness: float = 0.4
    clearance: float = 0.15

    def __post_init__(self):
        for name in ("length", "bluntness", "clearance"):
            value = getattr(self, name)
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be a number, got {value!r}") from None
            object.__setattr__(self, name, value)
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if self.clearance <= 0:
            raise ValueError(f"clearance must be > 0 (the gap between the train's floor and "
                             f"the ground, in train heights), got {self.clearance!r}")
        lo, hi = LIMITS["clearance"]
        if not lo <= self.clearance <= hi:
            raise ValueError(f"clearance {self.clearance:g} is outside {lo:g}..{hi:g} "
                             "train heights")
        lo, hi = LIMITS["length"]
        if self.length > hi:
            raise ValueError(f"nose length {self.length:g} is longer than the domain holds: "
                             f"the outlet is at x = {DOMAIN['x1']:g}, so the nose may be at "
                             f"most {hi:g} train heights long")
        if self.length < lo:
            raise ValueError(f"nose length must be >= {lo:g} train heights, got "
                             f"{self.length!r}")
        lo, hi = LIMITS["bluntness"]
        if not lo <= self.bluntness <= hi:
            raise ValueError(f"bluntness must be in {lo:g}..{hi:g}, got {self.bluntness!r}")

    @property
    def exponent(self) -> float:
        return 1.5 + 3.0 * self.bluntness

    @property
    def tip(self) -> tuple:
        return (0.0, self.clearance + TIP_HEIGHT)

    def outline(self, n: int = 241):
        """Points of the nose from the floor's shoulder through the tip to the roof's,
        ``(x, y)`` arrays of length ``n`` (finer near the tip, where it curves most)."""
        t = np.linspace(-0.5 * np.pi, 0.5 * np.pi, n)
        t = 0.5 * np.pi * np.sign(t) * (np.abs(t) / (0.5 * np.pi)) ** 1.5
        e = 2.0 / self.exponent
        c, s = np.abs(np.cos(t)), np.sin(t)
        x = self.length * (1.0 - c ** e)
        a = np.where(s > 0, 1.0 - TIP_HEIGHT, TIP_HEIGHT)
        y = self.tip[1] + a * np.sign(s) * np.abs(s) ** e
        return x, y

    def volume(self) -> float:
        """Area of the nose section (``x <= length``), in H^2: the design constraint."""
        x, y = self.outline(2001)
        return float(abs(np.sum(x[:-1] * y[1:] - x[1:] * y[:-1]) +
                         (x[-1] * y[0] - x[0] * y[-1])) / 2.0)

    def _surface(self):
        """The body's surface as a polyline: floor from the outlet, nose, roof to the
        outlet, the straight parts cut every 0.05 H (so a nearest vertex has the nearest
        segment beside it)."""
        x, y = self.outline(401)
        x1, c = DOMAIN["x1"], self.clearance
        n = max(2, int(np.ceil((x1 - self.length) / 0.05)))
        fx = np.linspace(x1, self.length, n, endpoint=False)
        rx = np.linspace(self.length, x1, n + 1)[1:]
        return (np.concatenate([fx, x, rx]),
                np.concatenate([np.full(n, c), y, np.full(n, c + 1.0)]))

    def body_distance(self, px, py):
        """Distance from points to the body's surface (nose, floor and roof): the nearest
        vertex of the surface polyline (a k-d tree), then the exact distance to the two
        segments beside it."""
        from scipy.spatial import cKDTree

        x, y = self._surface()
        px, py = np.asarray(px, dtype=float), np.asarray(py, dtype=float)
        shape = px.shape
        px, py = px.ravel(), py.ravel()
        _, k = cKDTree(np.column_stack([x, y])).query(np.column_stack([px, py]))
        best = np.full(px.shape, np.inf)
        for a in (k - 1, k):
            a = np.clip(a, 0, len(x) - 2)
            ax, ay, bx, by = x[a], y[a], x[a + 1], y[a + 1]
            dx, dy = bx - ax, by - ay
            t = np.clip(((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy + 1e-300), 0, 1)
            best = np.minimum(best, np.hypot(px - ax - t * dx, py - ay - t * dy))
        return best.reshape(shape)

    def inside(self, px, py):
        """True for points inside the train (nose or body)."""
        px, py = np.asarray(px, dtype=float), np.asarray(py, dtype=float)
        c, L = self.clearance, self.length
        yt = self.tip[1]
        s = np.clip((L - px) / L, 0.0, None)
        a = np.where(py > yt, 1.0 - TIP_HEIGHT, TIP_HEIGHT)
        m = self.exponent
        in_nose = (s ** m + np.abs((py - yt) / a) ** m) <= 1.0
        return np.where(px >= L, (py >= c) & (py <= c + 1.0), in_nose & (px >= 0))

    def to_dict(self) -> dict:
        return asdict(self)


class SizeField:
    """A target mesh size ``h(x, y)`` given by its logarithm on a tensor grid (``xs`` by
    ``ys``, bilinear), read point by point by gmsh's size callback; ``floor``/``ceiling``
    bound it. ``SizeField.constant(h)`` is one size everywhere."""

    def __init__(self, xs, ys, log_h, *, floor: float = 2e-3, ceiling: float = 0.5):
        self.xs, self.ys = np.asarray(xs, float), np.asarray(ys, float)
        self.log_h = np.clip(np.asarray(log_h, float), math.log(floor), math.log(ceiling))
        if self.log_h.shape != (len(self.xs), len(self.ys)):
            raise ValueError(f"log_h must be ({len(self.xs)}, {len(self.ys)}), got "
                             f"{self.log_h.shape}")
        self._xl, self._yl = self.xs.tolist(), self.ys.tolist()
        self._v = self.log_h.tolist()

    @classmethod
    def constant(cls, h: float):
        return cls([DOMAIN["x0"], DOMAIN["x1"]], [0.0, DOMAIN["top"]],
                   np.full((2, 2), math.log(h)), floor=min(2e-3, h), ceiling=max(0.5, h))

    @classmethod
    def on_grid(cls, shape: NoseShape, fn, **kw):
        """The field ``fn(X, Y) -> h`` sampled on the standard background grid of ``shape``."""
        xs, ys = background_grid(shape)
        X, Y = np.meshgrid(xs, ys, indexing="ij")
        return cls(xs, ys, np.log(np.maximum(fn(X, Y), 1e-6)), **kw)

    def scaled(self, factor: float) -> SizeField:
        """Every size times ``factor`` (cells change by about ``1 / factor^2``)."""
        return SizeField(self.xs, self.ys, self.log_h + math.log(factor),
                         floor=2e-3 * min(1.0, factor), ceiling=0.5)

    def __call__(self, x: float, y: float) -> float:
        xl, yl, v = self._xl, self._yl, self._v
        i = min(max(bisect.bisect_right(xl, x) - 1, 0), len(xl) - 2)
        j = min(max(bisect.bisect_right(yl, y) - 1, 0), len(yl) - 2)
        tx = min(max((x - xl[i]) / (xl[i + 1] - xl[i]), 0.0), 1.0)
        ty = min(max((y - yl[j]) / (yl[j + 1] - yl[j]), 0.0), 1.0)
        a = v[i][j] * (1 - tx) + v[i + 1][j] * tx
        b = v[i][j + 1] * (1 - tx) + v[i + 1][j + 1] * tx
        return math.exp(a * (1 - ty) + b * ty)

    def at(self, x, y):
        """Vectorised :meth:`__call__` (numpy arrays)."""
        x, y = np.asarray(x, float), np.asarray(y, float)
        i = np.clip(np.searchsorted(self.xs, x, side="right") - 1, 0, len(self.xs) - 2)
        j = np.clip(np.searchsorted(self.ys, y, side="right") - 1, 0, len(self.ys) - 2)
        tx = np.clip((x - self.xs[i]) / (self.xs[i + 1] - self.xs[i]), 0, 1)
        ty = np.clip((y - self.ys[j]) / (self.ys[j + 1] - self.ys[j]), 0, 1)
        v = self.log_h
        a = v[i, j] * (1 - tx) + v[i + 1, j] * tx
        b = v[i, j + 1] * (1 - tx) + v[i + 1, j + 1] * tx
        return np.exp(a * (1 - ty) + b * ty)


def background_grid(shape: NoseShape):
    """The tensor grid size fields live on: 0.01 H near the train's front and floor, coarser
    further out (about 60k nodes)."""
    x0, x1, top = DOMAIN["x0"], DOMAIN["x1"], DOMAIN["top"]
    L, c = shape.length, shape.clearance
    xs = np.unique(np.concatenate([np.linspace(x0, -1.0, 13), np.arange(-1.0, L + 1.5, 0.01),
                                   np.linspace(L + 1.5, x1, 60)]))
    ys = np.unique(np.concatenate([np.arange(0.0, c + 1.5, 0.01),
                                   np.linspace(c + 1.5, top, 30)]))
    return xs, ys


def too_coarse(shape: NoseShape, size: SizeField):
    """``None`` when ``size`` holds the body, else ``(where, size there, the most it may
    be)``: a size above half the gap under the floor, or above 0.1 on the nose."""
    c = shape.clearance
    bx, by = shape.outline()
    on_body = float(size.at(bx, by).max())
    gap = float(size.at(np.linspace(shape.length, DOMAIN["x1"], 50), np.full(50, 0.5 * c)).max())
    if gap > c / 2:
        return "in the gap under the floor", gap, c / 2
    if on_body > 0.1:
        return "on the nose", on_body, 0.1
    return None


def nose_mesh(shape: NoseShape, size: SizeField, *, max_cells: int = 400_000):
    """A scikit-fem ``MeshTri`` of the domain around the train, sized by ``size`` (gmsh's
    Frontal-Delaunay with the field as its size callback), boundaries tagged ``inlet``,
    ``outlet``, ``ground``, ``top``, ``body``. Refuses a field that cannot hold the body (a
    size above half the gap under the floor, or above 0.1 on the nose) or that would make
    more than ``max_cells`` triangles."""
    import gmsh

    x0, x1, top = DOMAIN["x0"], DOMAIN["x1"], DOMAIN["top"]
    c = shape.clearance
    bx, by = shape.outline()
    short = too_coarse(shape, size)
    if short is not None:
        where, worst, most = short
        raise ValueError(f"the grid is too coarse to hold the body: mesh size {worst:.3g} "
                         f"{where}, which needs at most {most:.3g} (the gap: half the "
                         f"clearance {c:g}; the nose: 0.1 train heights)")
    area = (x1 - x0) * top - 1.0 * (x1 - shape.length) - 0.6 * shape.length
    xs, ys = size.xs, size.ys
    cell_area = np.diff(xs)[:, None] * np.diff(ys)[None, :]
    h_mid = np.exp(0.25 * (size.log_h[:-1, :-1] + size.log_h[1:, :-1] + size.log_h[:-1, 1:] +
                           size.log_h[1:, 1:]))
    estimate = float(np.sum(cell_area / (0.433 * h_mid ** 2))) * min(1.0, area / (
        (x1 - x0) * top) + 0.1)
    if estimate > max_cells:
        raise ValueError(f"this size field would make about {estimate:.0f} cells, more than "
                         f"the {max_cells} allowed: give a coarser resolution")
    with GMSH_LOCK:
        gmsh_start(gmsh)
        try:
            gmsh.option.setNumber("General.Terminal", 0)
            gmsh.model.add("nose")
            g = gmsh.model.geo
            low = [g.addPoint(x0, 0, 0), g.addPoint(x1, 0, 0), g.addPoint(x1, c, 0)]
            nose = [g.addPoint(float(x), float(y), 0) for x, y in zip(bx, by)]
            high = [g.addPoint(x1, c + 1.0, 0), g.addPoint(x1, top, 0), g.addPoint(x0, top, 0)]
            # a user's profile (:mod:`.profile`) is a polyline: its corners stay corners
            outline = ([g.addLine(a, b) for a, b in zip(nose[:-1], nose[1:])]
                       if getattr(shape, "polyline", False) else [g.addSpline(nose)])
            curves = [g.addLine(low[0], low[1]), g.addLine(low[1], low[2]),
                      g.addLine(low[2], nose[0]), *outline,
                      g.addLine(nose[-1], high[0]), g.addLine(high[0], high[1]),
                      g.addLine(high[1], high[2]), g.addLine(high[2], low[0])]
            g.addPlaneSurface([g.addCurveLoop(curves)])
            g.synchronize()
            gmsh.model.mesh.setSizeCallback(lambda dim, tag, x, y, z, lc: size(x, y))
            for name in ("MeshSizeExtendFromBoundary", "MeshSizeFromPoints",
                         "MeshSizeFromCurvature"):
                gmsh.option.setNumber(f"Mesh.{name}", 0)
            gmsh.option.setNumber("Mesh.Algorithm", 6)
            gmsh.model.mesh.generate(2)
            tags, coords, _ = gmsh.model.mesh.getNodes()
            _, elem_nodes = gmsh.model.mesh.getElementsByType(2)
        finally:
            gmsh.finalize()
    return tag_nose_boundaries(gmsh_triangles(tags, coords, elem_nodes))


def tag_nose_boundaries(mesh):
    """``mesh`` with its boundary facets named by position (the body: what is left)."""
    tol = 1e-8
    x0, x1, top = DOMAIN["x0"], DOMAIN["x1"], DOMAIN["top"]

    def outer(x):
        return (x[0] < x0 + tol) | (x[0] > x1 - tol) | (x[1] < tol) | (x[1] > top - tol)

    return mesh.with_boundaries({
        "inlet": lambda x: x[0] < x0 + tol,
        "outlet": lambda x: x[0] > x1 - tol,
        "ground": lambda x: (x[1] < tol) & (x[0] > x0 + tol) & (x[0] < x1 - tol),
        "top": lambda x: (x[1] > top - tol) & (x[0] > x0 + tol) & (x[0] < x1 - tol),
        "body": lambda x: ~outer(x),
    })

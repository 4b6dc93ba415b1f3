"""Mesh size fields for the train nose: ``uniform``, ``estimator``, ``learned``.

- ``uniform``: one size ``h = 1 / resolution`` everywhere (uniform refinement, the
  baseline); the gap under the floor must hold two cells, so ``resolution >= 2 / clearance``.
- ``graded``: the mesh a person would make by hand: size ``h0`` on the body, growing by 0.2
  per unit of distance from it (capped at 0.4); refined by scaling the whole field (every
  cell shrinks alike). ``resolution = 1 / h0``.
- ``estimator``: solve, estimate, re-mesh, repeat. The indicator is Zienkiewicz-Zhu's: each
  element's velocity gradient against its average over the vertices' neighbourhoods,
  ``eta_K = |G_K - G*_K| sqrt(|K|)``; taken as ``eta_K = C_K h_K^2``, the new size
  equidistributes it, ``h_K = (eta / C_K)^(1/2)``, with ``eta`` chosen for a target number of
  cells, then graded (a size grows by at most 0.25 per unit of distance) on the background
  grid (:func:`~.nose.background_grid`). ``ESTIMATOR_CELLS`` cells per cycle.
- ``learned``: a small MLP maps the geometry features of a point (:func:`features`) to the
  log of the size the estimator arrives at; its weights are a ``.npz`` file (trained by
  :mod:`skiff.kernels.aero.learn` with skiff's Trainer on other shapes). One mesh, one
  solve: no loop. The network is evaluated here with numpy (a forward pass of ``Linear``
  and SiLU layers), so the solver does not depend on the trainer.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np

from .nose import DOMAIN, NoseShape, SizeField, background_grid

__all__ = ["ADAPT", "uniform_size", "graded_size", "min_resolution", "default_resolution",
           "estimator_sizes", "learned_size", "features", "indicator", "size_from_indicator",
           "SIZE_MODEL", "load_size_model", "DEFAULT_RESOLUTION", "ESTIMATOR_CELLS", "GRADE",
           "TRAINED_BOX", "trained_box", "outside_training"]

ADAPT = ("uniform", "graded", "estimator", "learned")
DEFAULT_RESOLUTION = 33           # 1 / h0 of the graded field: drag within 0.5% at Re 1000
UNIFORM_RESOLUTION = 20           # 1 / h of the uniform field (benchmarks/results/aero.md)
ESTIMATOR_CELLS = (2500, 5000, 6000)   # target cells of the estimator's cycles
GRADE = 0.25
# the learned field's sizes times this: the network predicts the estimator's last field
# (about 12k cells); on the training shapes the estimator's field before it (about 6k cells)
# already had drag within 0.15% of it, so the learned grid aims there (1.4^2 ~ 2x fewer)
LEARNED_FACTOR = 1.4
FEATURES = ("log distance to body", "log distance to ground", "x - tip", "x - shoulder",
            "y - tip", "length", "bluntness", "clearance")
# the box the shipped network was trained in: the extent of ``aero.learn.TRAINING_SHAPES``
# at Re 1000 (a model file written by ``train_size_model`` carries its own ``train_box``);
# outside it the predicted sizes are an extrapolation, and a learned solve says so
TRAINED_BOX = {"length": (1.5, 5.0), "bluntness": (0.2, 0.9), "clearance": (0.10, 0.30),
               "re": (1000.0, 1000.0)}
# how far outside the box still counts as inside (a Reynolds number within 20% of the
# trained one changes the boundary layer's thickness by under 10%)
BOX_SLACK = {"length": 0.0, "bluntness": 0.0, "clearance": 0.0, "re": 0.2}
SIZE_MODEL = Path(__file__).resolve().parents[3] / "data" / "aero" / "nose_size_mlp.npz"


def min_resolution(shape: NoseShape, adapt: str = "graded") -> float:
    """The coarsest uniform or graded field that holds the body: two cells across the gap
    (P2 holds the gap's Couette-Poiseuille profile exactly)."""
    if adapt == "uniform":
        return 2.0 / shape.clearance
    return 2.0 / shape.clearance * (1.0 + 0.1 * DEFAULT_RESOLUTION * shape.clearance)


def default_resolution(shape: NoseShape, adapt: str = "graded", re: float | None = None) -> int:
    """The default ``resolution``; for ``graded`` at ``re`` above 1000 it grows as
    ``sqrt(re / 1000)``: the boundary layer thins as ``Re^-1/2``, and the field sized for Re
    1000 put drag 1.3% off the grid-converged value at Re 3000 (round 29; 0.12% at 1000)."""
    base = UNIFORM_RESOLUTION if adapt == "uniform" else DEFAULT_RESOLUTION
    if adapt != "uniform" and re is not None and float(re) > 1000.0:
        base = math.ceil(base * math.sqrt(float(re) / 1000.0))
    return max(base, math.ceil(1.1 * min_resolution(shape, adapt)))


def uniform_size(shape: NoseShape, resolution: float | None = None) -> SizeField:
    """One size ``1 / resolution`` everywhere."""
    resolution = default_resolution(shape, "uniform") if resolution is None else resolution
    if not (math.isfinite(resolution) and resolution > 0):
        raise ValueError(f"resolution must be > 0, got {resolution!r}")
    return SizeField.constant(1.0 / float(resolution))


def graded_size(shape: NoseShape, resolution: float | None = None,
                re: float | None = None) -> SizeField:
    """The hand-made field: ``1 / resolution`` on the body, growing with the distance from
    it (0.2 per unit at the default resolution; the growth scales with the size, so that a
    finer field is the same field with every size divided). The default resolution grows
    with ``re`` above 1000 (:func:`default_resolution`)."""
    resolution = default_resolution(shape, re=re) if resolution is None else resolution
    if not (math.isfinite(resolution) and resolution > 0):
        raise ValueError(f"resolution must be > 0, got {resolution!r}")
    h0 = 1.0 / float(resolution)
    return SizeField.on_grid(shape, lambda X, Y: np.minimum(
        h0 + 0.2 * shape.body_distance(X, Y) * h0 * DEFAULT_RESOLUTION, 0.4),
        floor=min(2e-3, h0))


# ------------------------------------------------------------------ the estimator
def indicator(th, ux, uy) -> tuple:
    """``(eta, h)`` per element: the ZZ gradient-recovery indicator of the velocity, and the
    element's size ``sqrt(2 |K|)``."""
    mesh = th.mesh
    t = mesh.t
    area = np.sum(th.dx, axis=1)                         # |K|: the quadrature weights
    g = [th.grad_at_quad(c) for c in (ux, uy)]           # (2, E, Q) each
    G = np.concatenate([np.sum(gi * th.dx, axis=2) / area for gi in g])   # (4, E) means
    nvert = mesh.p.shape[1]
    weight = np.bincount(t.ravel(), weights=np.tile(area, 3), minlength=nvert)
    rec = np.stack([np.bincount(t.ravel(), weights=np.tile(area * Gi, 3), minlength=nvert)
                    for Gi in G]) / np.maximum(weight, 1e-300)
    G_star = rec[:, t].mean(axis=1)                      # (4, E)
    eta = np.sqrt(np.sum((G - G_star) ** 2, axis=0) * area)
    return eta, np.sqrt(2.0 * area)


def size_from_indicator(shape: NoseShape, mesh, eta, h, cells: int) -> SizeField:
    """The equidistributing size field for about ``cells`` cells, on the background grid."""
    from matplotlib.tri import Triangulation

    C = np.maximum(eta, 1e-14) / h ** 2
    area = 0.5 * h ** 2
    # cells(eta) = sum area_K / (0.433 (eta / C_K)) -> solve for eta
    level = float(np.sum(area * C) / (0.433 * cells))
    h_new = np.sqrt(level / C)
    xs, ys = background_grid(shape)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    tri = Triangulation(mesh.p[0], mesh.p[1], mesh.t.T)
    k = tri.get_trifinder()(X.ravel(), Y.ravel()).reshape(X.shape)
    field = np.where(k >= 0, h_new[np.maximum(k, 0)], 0.4)
    field = np.clip(field, 2e-3, 0.4)
    field[shape.inside(X, Y)] = np.nan
    return SizeField(xs, ys, np.log(_graded(xs, ys, hold_body(shape, X, Y, field))))


def hold_body(shape: NoseShape, X, Y, h):
    """``h`` capped where the geometry needs it whatever the flow: 0.4 times the clearance
    in the gap under the floor, 0.06 within 0.05 of the body."""
    gap = (X > 0) & (Y < shape.clearance)
    h = np.where(gap, np.minimum(h, 0.4 * shape.clearance), h)
    near = shape.body_distance(X, Y) < 0.05
    return np.where(near, np.minimum(h, 0.06), h)


def _graded(xs, ys, h, grade: float = GRADE, sweeps: int = 60):
    """``h`` limited so that it grows by at most ``grade`` per unit distance (inside the body,
    NaN, takes the neighbours' values)."""
    h = np.where(np.isnan(h), 0.4, h)
    dx, dy = np.diff(xs), np.diff(ys)
    for _ in range(sweeps):
        old = h
        h = h.copy()
        h[1:, :] = np.minimum(h[1:, :], h[:-1, :] + grade * dx[:, None])
        h[:-1, :] = np.minimum(h[:-1, :], h[1:, :] + grade * dx[:, None])
        h[:, 1:] = np.minimum(h[:, 1:], h[:, :-1] + grade * dy[None, :])
        h[:, :-1] = np.minimum(h[:, :-1], h[:, 1:] + grade * dy[None, :])
        if np.array_equal(h, old):
            break
    return h


def estimator_sizes(shape: NoseShape, re: float, *, cells=ESTIMATOR_CELLS, start=None,
                    reporter=None, solve=None):
    """Run the solve-estimate-refine loop; returns ``(size, flows)``: the last size field and
    the solve of every cycle (the last one is on the mesh of the last field but one...: each
    flow is the solve on the mesh of the field before it). ``solve(shape, size, re)`` is the
    flow solve (default :func:`~.nose_flow.solve_nose_flow`)."""
    from .nose_flow import solve_nose_flow

    size = start or graded_size(shape, 1.05 * min_resolution(shape))
    flows = []
    for n in cells:
        if solve is None:
            # Newton starts from the cycle before (its fields carried onto the new mesh)
            flow = solve_nose_flow(shape, size, re, reporter=reporter,
                                   start=flows[-1] if flows else None)
        else:
            flow = solve(shape, size, re)
        flows.append(flow)
        eta, h = indicator(flow.th, flow.state.ux, flow.state.uy)
        size = size_from_indicator(shape, flow.th.mesh, eta, h, n)
    return size, flows


# ------------------------------------------------------------------ the learned field
def features(shape: NoseShape, x, y) -> np.ndarray:
    """The network's inputs at points ``(x, y)``: ``(N, 8)`` in the order of ``FEATURES``,
    each scaled to about unit size."""
    x, y = np.ravel(x).astype(float), np.ravel(y).astype(float)
    d = shape.body_distance(x, y)
    tip_y = shape.tip[1]
    return np.column_stack([
        np.log(d + 0.01), np.log(y + 0.01), np.tanh(x / 2.0), np.tanh((x - shape.length) / 2.0),
        np.tanh((y - tip_y) / 2.0), np.full_like(x, shape.length / 5.0),
        np.full_like(x, shape.bluntness), np.full_like(x, shape.clearance * 4.0)])


def load_size_model(path=None) -> dict:
    """The learned size network's weights: ``W0, b0, W1, b1, ...`` and ``scale`` (the
    target cells it was trained for), from ``path`` or ``$SKIFF_NOSE_SIZE_MODEL`` or the
    file shipped with skiff."""
    path = Path(path or os.environ.get("SKIFF_NOSE_SIZE_MODEL") or SIZE_MODEL)
    if not path.is_file():
        raise FileNotFoundError(
            f"no learned size model at {str(path)!r}: train one with "
            "skiff.aero.train_size_model() or use --adapt estimator")
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def predict_log_size(model: dict, X: np.ndarray) -> np.ndarray:
    """The network's forward pass in numpy: ``Linear -> SiLU -> ... -> Linear``."""
    h = (X - model["mean"]) / model["std"]
    layers = sum(1 for k in model if k.startswith("W"))
    for i in range(layers):
        h = h @ model[f"W{i}"].T + model[f"b{i}"]
        if i < layers - 1:
            h = h / (1.0 + np.exp(-h))
    return h[:, 0] * float(model["y_std"]) + float(model["y_mean"])


def trained_box(model: dict) -> dict:
    """``{parameter: (lo, hi)}`` the network was trained on: the model file's ``train_box``
    (rows length, bluntness, clearance, re), or :data:`TRAINED_BOX` for a file without."""
    if "train_box" not in model:
        return dict(TRAINED_BOX)
    box = np.asarray(model["train_box"], float).reshape(-1, 2)
    return {k: (float(lo), float(hi)) for k, (lo, hi) in zip(TRAINED_BOX, box)}


def outside_training(shape: NoseShape, re: float, box: dict) -> list:
    """The parameters of ``(shape, re)`` outside the network's training ``box``, each as
    ``"name value (trained lo..hi)"``; empty inside."""
    values = {**shape.to_dict(), "re": float(re)}
    out = []
    for k, (lo, hi) in box.items():
        v, slack = values[k], BOX_SLACK.get(k, 0.0)
        if not lo * (1 - slack) - 1e-12 <= v <= hi * (1 + slack) + 1e-12:
            span = f"{lo:g}" if lo == hi else f"{lo:g}..{hi:g}"
            out.append(f"{k} {v:g} (trained {span})")
    return out


def learned_size(shape: NoseShape, re: float = 1000.0, *, factor: float = 1.0,
                 model: dict | None = None) -> SizeField:
    """The size field the network predicts for ``shape``, times ``LEARNED_FACTOR * factor``
    (``factor`` is how a finer or coarser resolution asks for more or fewer cells).
    ``field.outside`` lists the parameters outside the network's training box (there the
    sizes are extrapolated: check the drag against ``estimator`` or a finer ``graded``)."""
    t0 = time.perf_counter()
    model = model or load_size_model()
    xs, ys = background_grid(shape)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    log_h = predict_log_size(model, features(shape, X, Y)).reshape(X.shape)
    h = np.clip(np.exp(log_h) * LEARNED_FACTOR * factor, 2e-3, 0.4)
    h[shape.inside(X, Y)] = np.nan
    field = SizeField(xs, ys, np.log(_graded(xs, ys, hold_body(shape, X, Y, h))))
    field.seconds = time.perf_counter() - t0
    field.outside = outside_training(shape, re, trained_box(model))
    return field


def _domain_area(shape: NoseShape) -> float:
    return (DOMAIN["x1"] - DOMAIN["x0"]) * DOMAIN["top"] - (DOMAIN["x1"] - shape.length) - \
        shape.volume()

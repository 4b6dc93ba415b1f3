"""``%solve train-nose``: the nose's mesh sized by ``uniform``, ``estimator`` or ``learned``,
the flow solve, the plots as artifacts. Also :func:`solve_nose`, the library call."""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from skiff.kernels.backend.figures import render_png
from skiff.kernels.backend.report import NullReporter, Reporter

from .adapt import (
    ADAPT,
    default_resolution,
    estimator_sizes,
    graded_size,
    learned_size,
    uniform_size,
)
from .export import save_in_job
from .nose import MAX_RE, NoseShape, check_re, too_coarse
from .nose_flow import DT, T_END, NoseFlow, solve_nose_flow
from .nose_plots import (
    convergence_figure,
    cp_figure,
    fields_figure,
    grid_figure,
    history_figure,
)

__all__ = ["run", "solve_nose", "nose_size", "reynolds_sweep"]


def needed_resolution(shape: NoseShape, resolution: float, size, make=None) -> int | None:
    """The least resolution whose field holds ``shape`` when ``size`` (a uniform or graded
    field at ``resolution``) does not; None when it does. Those fields' sizes near the body
    scale as ``1 / resolution`` until they reach the field's largest size: ``make(r)``
    (the field at resolution ``r``) then checks the estimate, one step at a time (round 44:
    at resolution 0.5 the capped size said "resolution 3 or finer", at 2 "11", for one
    shape)."""
    short = too_coarse(shape, size)
    if short is None:
        return None
    need = max(1, int(math.ceil(float(resolution) * short[1] / short[2] * (1 + 1e-9))))
    if make is None:
        return need
    def holds(r):
        return too_coarse(shape, make(r)) is None

    lo, hi = 0, need          # lo fails (0: nothing), hi is tried: bisection, finer holds more
    for _ in range(30):       # bounded: each try is one analytic field, no mesh
        if holds(hi):
            break
        lo, hi = hi, 2 * hi
    else:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid >= 1 and holds(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _held(shape: NoseShape, size, resolution, adapt: str, make=None):
    """``size``, or a ``ValueError`` naming the resolution that holds the body (the mesher's
    "too coarse" said only the mesh size in the gap)."""
    if resolution is None:
        return size
    need = needed_resolution(shape, resolution, size, make)
    if need is None:
        return size
    where, worst, most = too_coarse(shape, size)
    raise ValueError(f"resolution {float(resolution):g} is too coarse to hold the body of this "
                     f"shape (clearance {shape.clearance:g}): the {adapt} grid's size "
                     f"{worst:.3g} {where} "
                     f"must be at most {most:.3g}; resolution {need} or finer holds it, or "
                     f"leave resolution out (the default, "
                     f"{default_resolution(shape, adapt)}, fits each shape)")


def nose_size(shape: NoseShape, adapt: str, re: float, *, resolution=None, reporter=None):
    """``(size field, record)`` for ``adapt`` (the estimator's loop solves on the way; its
    record lists the cycles' cells, drag and seconds)."""
    if adapt not in ADAPT:
        import difflib

        close = difflib.get_close_matches(str(adapt), ADAPT, n=1)
        raise ValueError(f"unknown adapt {adapt!r}"
                         + (f" (did you mean {close[0]!r}?)" if close else "")
                         + f": choose from {', '.join(ADAPT)}")
    factor = 1.0 if resolution is None else default_resolution(shape) / float(resolution)
    if adapt == "uniform":
        return _held(shape, uniform_size(shape, resolution), resolution, adapt,
                     lambda r: uniform_size(shape, r)), {}
    if adapt == "graded":
        size = _held(shape, graded_size(shape, resolution, re), resolution, adapt,
                     lambda r: graded_size(shape, r, re))
        return size, ({} if resolution is not None else
                      {"resolution": default_resolution(shape, re=re)})
    if adapt == "learned":
        if hasattr(shape, "points"):
            raise ValueError("the learned grid knows the parametric noses only (length, "
                             "bluntness, clearance): solve a profile with adapt='graded' "
                             "or 'estimator'")
        size = learned_size(shape, re, factor=factor)
        record = {"predict_seconds": round(size.seconds, 4)}
        if size.outside:
            # the network's sizes are an extrapolation there: say so where the user looks
            message = (f"the learned grid is extrapolated: {'; '.join(size.outside)}; its "
                       "drag error was measured only inside the training box: check it "
                       "with --adapt estimator or a finer --adapt graded")
            warnings.warn(message, UserWarning, stacklevel=3)
            (reporter or NullReporter()).log(message, level="warning")
            record["learned_outside"] = list(size.outside)
        return size, record
    t0 = time.perf_counter()
    size, flows = estimator_sizes(shape, re, reporter=reporter)
    if factor != 1.0:
        size = size.scaled(factor)
    return size, {"estimator_cycles": [{"cells": f.cells, "cd": f.cd,
                                        "seconds": round(f.seconds, 3)} for f in flows],
                  "estimator_seconds": round(time.perf_counter() - t0, 3)}


def solve_nose(length: float = 3.0, bluntness: float = 0.4, clearance: float = 0.15, *,
               re: float = 1000.0, adapt: str = "learned", resolution=None, mode: str = "auto",
               reporter=None, keep: bool = True, start: NoseFlow | None = None,
               shape: NoseShape | None = None, t_end: float | None = None,
               dt: float | None = None, state_dir=None, resume_from=None,
               **unknown) -> NoseFlow:
    """Solve the flow around one nose shape (see :mod:`.nose`); ``adapt`` sizes the mesh.

    ``resolution`` refines every adapt alike (cells grow about as its square; default: the
    one that puts drag within 0.5% of the grid-converged value at Re 1000). ``start``: a
    flow of the same shape solved before with ``keep=True`` (another grid, another Re):
    Newton starts from it (a Reynolds sweep: pass each solve to the next). ``shape``: a
    :class:`~.nose.NoseShape` or a user's :class:`~.profile.NoseProfile` (then ``length``,
    ``bluntness``, ``clearance`` are not used). ``t_end``, ``dt``: the time-marching mode's
    simulated time and step (default 30 and 0.02 H/U; its averages are over the second
    half: a shape that sheds slowly needs more, which ``averages['cd_error']`` says). Returns a
    :class:`~.nose_flow.NoseFlow` (``.cd``, ``.cl``, ``.cells``, ``.cp``). ``state_dir``,
    ``resume_from``: the time-marching mode's kept state (:func:`~.nose_flow.solve_nose_flow`:
    a cancelled march goes on from its step, round 48 h7).
    """
    if unknown:
        raise TypeError(unknown_keywords("solve_nose", unknown))
    if shape is None:
        shape = NoseShape(length, bluntness, clearance)
    elif not isinstance(shape, NoseShape):
        raise TypeError(f"shape takes a NoseShape or a NoseProfile, got {type(shape).__name__}")
    re = check_re(re)
    if resolution is not None and not float(resolution) > 0:
        raise ValueError(f"resolution must be > 0, got {resolution!r}")
    march = _march_times(t_end, dt)
    t0 = time.perf_counter()
    size, record = nose_size(shape, adapt, re, resolution=resolution, reporter=reporter)
    flow = solve_nose_flow(shape, size, re, mode=mode, reporter=reporter, keep=keep,
                           start=start, state_dir=state_dir, resume_from=resume_from,
                           **march)
    flow.adapt = adapt
    flow.details = {**record, "total_seconds": round(time.perf_counter() - t0, 3)}
    flow.seconds = time.perf_counter() - t0
    return flow


# what an aerodynamicist types for solve_nose's keywords (round 35: Re=500 was Python's bare
# "unexpected keyword argument 'Re'")
_KEYWORD_ALIASES = {"Re": "re", "RE": "re", "reynolds": "re", "Reynolds": "re",
                    "reynolds_number": "re", "L": "length", "nose_length": "length",
                    "gap": "clearance", "ground_clearance": "clearance", "h": "clearance",
                    "mesh": "adapt", "grid": "adapt", "refinement": "resolution"}


_NOSE_KEYWORDS = ("length, bluntness, clearance (train heights), re (Reynolds number on the "
                  "train height), adapt, resolution, mode, shape, start, keep, t_end, dt, "
                  "state_dir, resume_from")

# what the model cannot take, said in its terms (round 36: yaw=5 and speed=80 got the list of
# keywords only, and an aerodynamicist is left to guess whether a speed is an Re)
_NO_YAW = ("the model is 2-D, a side view of the nose over the ground with the flow along "
           "the train: it has no yaw, crosswind or incidence angle")
_SPEED = ("the flow is set by re = U H / nu alone (U the train's speed, H its height, nu the "
          "air's kinematic viscosity, 1.5e-5 m^2/s): 80 m/s at H = 4 m is re 2.1e7, far above "
          f"this laminar model's {MAX_RE:g}; a speed sweep is reynolds_sweep(res=[...])")
_KEYWORD_WHY = {**dict.fromkeys(("yaw", "yaw_angle", "beta", "crosswind", "angle", "alpha",
                                 "aoa", "angle_of_attack", "incidence"), _NO_YAW),
                **dict.fromkeys(("speed", "speeds", "velocity", "velocities", "U", "u",
                                 "u_inf", "U_inf", "v", "mach", "Mach"), _SPEED)}


def keyword_why(name: str) -> str | None:
    """Why the nose model takes no ``name`` (a yaw angle, a speed: its terms), or None."""
    return _KEYWORD_WHY.get(name)


def unknown_keywords(fn: str, given: dict, keywords: str = _NOSE_KEYWORDS,
                     renamed: dict | None = None) -> str:
    """One line naming ``fn``'s keywords a user passed that it does not have, with the one
    meant where it is known (``Re`` -> ``re``; ``renamed`` maps a meant name to ``fn``'s
    own: ``reynolds_sweep``'s ``res``), and ``keywords``, its own."""
    parts = []
    for name in given:
        meant = _KEYWORD_ALIASES.get(name)
        meant = (renamed or {}).get(meant, meant)
        parts.append(f"{name}= (did you mean {meant}=?)" if meant else f"{name}=")
    why = list(dict.fromkeys(_KEYWORD_WHY[name] for name in given if name in _KEYWORD_WHY))
    return (f"{fn}() takes no {', '.join(parts)}; " + "".join(f"{w}; " for w in why)
            + f"its keywords: {keywords}")


def _march_times(t_end, dt) -> dict:
    """``t_end``, ``dt`` of the time-marching mode checked (None: the defaults)."""
    out = {}
    for name, v in (("t_end", t_end), ("dt", dt)):
        if v is None:
            continue
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number > 0, got {v!r}") from None
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a number > 0, got {v!r}")
        out[name] = v
    if out.get("t_end", T_END) < 4 * out.get("dt", DT):
        raise ValueError(f"t_end {out.get('t_end', T_END):g} holds fewer than 4 time steps of "
                         f"dt {out.get('dt', DT):g}: the averages need a window")
    return out


def reynolds_sweep(res, length: float = 3.0, bluntness: float = 0.4, clearance: float = 0.15,
                   *, shape: NoseShape | None = None, adapt: str = "graded", resolution=None,
                   mode: str = "auto", reporter=None, keep: bool = False,
                   t_end: float | None = None, dt: float | None = None, **unknown) -> list:
    """One shape at several Reynolds numbers (a speed sweep: ``re = U H / nu``): a list of
    :class:`~.nose_flow.NoseFlow` in
    the order of ``res``. Solved from the lowest Re up, each Newton starting from the flow
    before (``start``): the same flows as separate solves, in fewer Newton steps. ``keep``:
    keep every flow's fields (the last one's are always kept while the sweep runs).
    ``t_end``, ``dt``: the time-marching mode's, for a Re with no steady solve."""
    if unknown:   # speeds=[...] was Python's bare "unexpected keyword argument" (round 36)
        raise TypeError(unknown_keywords(
            "reynolds_sweep", unknown, "res (the Reynolds numbers), length, bluntness, "
            "clearance (train heights), shape, adapt, resolution, mode, reporter, keep, "
            "t_end, dt", renamed={"re": "res"}))
    values = [check_re(r) for r in np.atleast_1d(np.asarray(res, dtype=object))]
    _march_times(t_end, dt)
    if not values:
        raise ValueError("res is empty: give the Reynolds numbers to solve at")
    if shape is None:
        shape = NoseShape(length, bluntness, clearance)
    flows, prev = {}, None
    for i in sorted(range(len(values)), key=lambda k: values[k]):
        flow = solve_nose(shape=shape, re=values[i], adapt=adapt, resolution=resolution,
                          mode=mode, reporter=reporter, keep=True, start=prev,
                          t_end=t_end, dt=dt)
        if prev is not None and not keep:
            prev.mesh, prev.fields, prev.state, prev.th = None, {}, None, None
        flows[i], prev = flow, flow
    if not keep and prev is not None:
        prev.mesh, prev.fields, prev.state, prev.th = None, {}, None, None
    return [flows[i] for i in range(len(values))]


def run(config: dict, reporter: Reporter | None = None) -> NoseFlow:
    """Config keys: ``length``, ``bluntness``, ``clearance``, ``re``, ``adapt``,
    ``resolution`` (None: the default), ``flow`` ('auto', 'steady', 'unsteady'), ``t_end``
    and ``dt`` of the time-marching mode (None: 30 and 0.02);
    ``profile``: a CSV of the nose's outline points (:class:`~.profile.NoseProfile`; then
    ``length`` and ``bluntness`` are not used); ``save``: a path the flow is written to
    (:meth:`~.nose_flow.NoseFlow.save`: ``.vtu``, ``.vtk``, ``.npz``, ``.csv``,
    ``.history.csv``, ``.json``; :func:`~.export.save_in_job`: a steady end's history is one
    row, a file that cannot be written a warning, the result kept); ``resume_from``: a
    cancelled march's ``RUN/flow-state.npz`` (kept in the run folder as it goes, round 48
    h7), which it goes on from."""
    reporter = reporter or NullReporter()
    shape = None
    if config.get("profile"):
        from .profile import NoseProfile

        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            shape = NoseProfile.from_csv(config["profile"], config["clearance"])
        for w in said:                      # points put in order: said in the job's log too
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            reporter.log(str(w.message), level="warning")
    flow = solve_nose(config.get("length", 3.0), config.get("bluntness", 0.4),
                      config["clearance"], re=config["re"], adapt=config["adapt"],
                      resolution=config.get("resolution"), mode=config.get("flow", "auto"),
                      reporter=reporter, shape=shape, t_end=config.get("t_end"),
                      dt=config.get("dt"), state_dir=getattr(reporter, "run_dir", None),
                      resume_from=config.get("resume_from"))
    reporter.log(repr(flow))
    reporter.info(cd=flow.cd, cl=flow.cl, cells=flow.cells, dofs=flow.dofs, mode=flow.mode)
    run_dir = getattr(reporter, "run_dir", None)
    if run_dir is not None:
        out = run_dir / "artifacts"
        out.mkdir(exist_ok=True)
        figures = [("fields", fields_figure), ("grid", grid_figure), ("cp", cp_figure)]
        if flow.history:
            figures.append(("history", history_figure))
        if flow.newton:                 # Newton's updates, stage by stage
            figures.append(("convergence", convergence_figure))
        for name, draw in figures:
            path = out / f"{name}.png"
            render_png(draw(flow), path)
            reporter.artifact(name, path, kind="image")
    if config.get("save"):     # .vtu / .vtk, .npz, .csv, .history.csv, .json: never fails the job
        save_in_job(flow, config["save"], reporter)
    return flow

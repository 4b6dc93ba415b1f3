"""The flow around the train nose: boundary data, the steady solve (Newton with a continuation
in the Reynolds number), the unsteady fallback with time averages, forces and the surface
pressure coefficient. Geometry and meshes: :mod:`.nose`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from skiff.kernels.backend.report import NullReporter

from .nose import DOMAIN, NoseShape, SizeField, check_re, nose_mesh
from .spaces import TaylorHood
from .steady import FlowProblem, FlowState, initial_state, momentum_residual, solve_steady
from .unsteady import Stepper, run_steps

__all__ = ["NoseFlow", "solve_nose_flow", "nose_problem", "body_forces", "surface_cp",
           "time_averages"]

DT = 0.02            # time step of the unsteady fallback (H / U)
# what each number of a nose result is measured in: lengths in train heights H, times in
# H / U (U the train's speed); cd and cl are forces per unit span over 1/2 rho U^2 H
# (docs/aero.md), cp the pressure over 1/2 rho U^2
UNITS = {"length": "H", "bluntness": "1", "clearance": "H", "re": "1", "cd": "1", "cl": "1",
         "cp": "1", "s": "H", "x": "H", "y": "H", "seconds": "s", "t": "H/U"}
T_END = 30.0         # simulated time of the unsteady fallback; averages over its second half


@dataclass
class NoseFlow:
    """One solve of the nose on one mesh: coefficients, the surface ``cp(s)``, the record."""

    shape: NoseShape
    re: float
    cd: float
    cl: float
    cells: int
    dofs: int
    seconds: float
    mode: str                          # 'steady' | 'unsteady'
    newton_steps: int = 0
    time_steps: int = 0
    cp: dict = field(default_factory=dict)            # 's', 'x', 'y', 'cp' along the body
    history: dict = field(default_factory=dict)       # 't', 'cd', 'cl' (unsteady)
    averages: dict = field(default_factory=dict)      # time averages (unsteady)
    mesh: object = field(default=None, repr=False)    # (p, t)
    fields: dict = field(default_factory=dict, repr=False)
    state: object = field(default=None, repr=False)   # FlowState
    th: object = field(default=None, repr=False)      # TaylorHood
    adapt: str = ""                                   # how the mesh was sized
    details: dict = field(default_factory=dict)       # timings of the stages, the loop's record
    # Newton's record: one entry per continuation stage tried, {'re', 'updates' (|du|/|u| per
    # step), 'tol', 'converged'}, in the order run (a stage that failed, then its retry)
    newton: list = field(default_factory=list)

    def to_json(self) -> dict:
        """The numbers (``result.json``, ``--json``): coefficients, the surface ``cp`` (at
        most 400 points), time averages and the record."""
        cp = self.cp
        keep = np.unique(np.linspace(0, len(cp["s"]) - 1, min(400, len(cp["s"]))).astype(int)) \
            if cp else []
        out = {"problem": "train-nose", **self.shape.to_dict(), "re": self.re,
               "cd": _num(self.cd), "cl": _num(self.cl), "cells": int(self.cells),
               "dofs": int(self.dofs), "seconds": round(self.seconds, 3), "mode": self.mode,
               "adapt": self.adapt, "newton_steps": int(self.newton_steps),
               "time_steps": int(self.time_steps),
               "cp": {k: [round(float(v), 5) for v in cp[k][keep]] for k in ("s", "x", "y",
                                                                              "cp")}
               if cp else {}, **self.details}
        if self.averages:
            out["averages"] = self.averages
        if self.newton:
            out["newton"] = self.newton
        out["units"] = dict(UNITS)
        return out

    def summary(self) -> dict:
        return self.to_json()

    def save(self, path, *, format: str | None = None):
        """Write the flow for ParaView (``.vtu``, ``.vtk``), numpy (``.npz``) or a
        spreadsheet (``.csv``: the surface's ``s, x, y, cp``; ``.history.csv``: a
        time-averaged solve's ``t, cd, cl``), the numbers (``.json``); the format from the suffix
        or ``format`` (:data:`~.export.FORMATS`). The grid files hold the mesh's vertices
        (x / H, y / H, in the train's frame: the ground moves at U = 1) with ``velocity``,
        ``speed``, ``pressure`` (minus the inlet's mean) and ``cp`` there, and ``cd``,
        ``cl``, ``re`` and the shape as field data. Returns the path written."""
        from .export import save_flow

        f = self.fields
        data = {}
        if self.mesh is not None and f:
            if "ux" in f:
                data["velocity"] = np.column_stack([f["ux"], f["uy"]])
            data["speed"], data["pressure"], data["cp"] = f["speed"], f["p"], 2.0 * f["p"]
        shape = self.shape.to_dict()
        field = {"cd": self.cd, "cl": self.cl, "re": self.re,
                 **{k: v for k, v in shape.items() if isinstance(v, (int, float))}}
        what = "time-averaged cd, cl; fields of the last step" if self.mode == "unsteady" \
            else "steady"
        title = (f"skiff train-nose {shape}, Re {self.re:g}: cd {self.cd:.6g}, "
                 f"cl {self.cl:.6g} ({what})")
        return save_flow(path, mesh=self.mesh, point_data=data, field_data=field,
                         surface={k: self.cp[k] for k in ("s", "x", "y", "cp")}
                         if self.cp else {}, record=self.to_json(), title=title,
                         format=format, history=self.history,
                         no_history="this nose was solved steady (no time history): the "
                                    "history CSV is for a time-averaged solve (--flow "
                                    "unsteady, or auto where the steady solve fails)")

    def __repr__(self) -> str:
        s = self.shape
        mean = ""
        if self.mode == "unsteady":
            err = self.averages.get("cd_error")
            mean = (f" (time-averaged, cd +- {err:.2g})" if err is not None else
                    " (time-averaged)")
        what = (f"{s.name} length {s.length:.4g}" if hasattr(s, "points") else
                f"length {s.length:g} bluntness {s.bluntness:g}")
        return (f"<NoseFlow {what} clearance {s.clearance:g}, Re {self.re:g}: "
                f"cd {self.cd:.5g}, cl {self.cl:.5g}{mean}; "
                f"{self.cells} cells ({self.adapt or 'given'} grid), {self.seconds:.1f} s>")

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))

    def _repr_html_(self) -> str:
        from .nose_plots import html_view

        return html_view(self)


def _num(v):
    v = float(v)
    return v if np.isfinite(v) else None


def nose_problem(th: TaylorHood, re: float) -> FlowProblem:
    """``u = (1, 0)`` on the inlet, the moving ground and the top; no slip on the body."""
    fixed = th.velocity_dofs("inlet", "ground", "top", "body")
    moving = th.velocity_dofs("inlet", "ground", "top")
    gx = np.zeros(th.nv)
    gx[moving] = 1.0
    body = th.velocity_dofs("body")
    gx[body] = 0.0
    return FlowProblem(th, 1.0 / re, fixed, gx, np.zeros(th.nv))


def body_forces(prob: FlowProblem, st: FlowState, dudt=None) -> tuple:
    """``(cd, cl)`` on the body: minus the momentum residual summed over its rows (the
    volume-integral form of the force), over ``1/2 rho U^2 H`` with ``U = H = 1``."""
    body = prob.th.velocity_dofs("body")
    rx, ry = momentum_residual(prob, st.ux, st.uy, st.p, dudt=dudt)
    return -2.0 * float(rx[body].sum()), -2.0 * float(ry[body].sum())


def _inlet_pressure(th, p):
    dofs = th.pressure_dofs("inlet")
    return float(np.mean(p[dofs]))


def surface_cp(shape: NoseShape, th: TaylorHood, p) -> dict:
    """``cp = 2 (p - p_inf)`` at the body's vertices ordered along the surface: ``s`` is the
    arc length from the tip (negative along the floor side, positive over the roof)."""
    from scipy.spatial import cKDTree

    ox, oy = shape.outline(2001)
    x1, c = DOMAIN["x1"], shape.clearance
    fx = np.linspace(x1, shape.length, 400, endpoint=False)
    rx = np.linspace(shape.length, x1, 400)[1:]
    px = np.concatenate([fx, ox, rx])
    py = np.concatenate([np.full(400, c), oy, np.full(399, c + 1.0)])
    arc = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(px), np.diff(py)))])
    arc -= arc[400 + int(np.argmin(ox))]                 # 0 at the tip (the smallest x)
    verts = th.pressure_dofs("body")
    xy = th.pressure_points[:, verts]
    _, near = cKDTree(np.column_stack([px, py])).query(xy.T)
    s = arc[near]
    order = np.argsort(s)
    p_inf = _inlet_pressure(th, p)
    return {"s": s[order], "x": xy[0, order], "y": xy[1, order],
            "cp": 2.0 * (np.asarray(p)[verts[order]] - p_inf)}


STAGE_TOL = 1e-3     # Newton's tolerance on the continuation's stages before the last


def _continuation(re: float, start_re: float | None = None) -> list:
    """Reynolds numbers Newton climbs through to ``re`` (x3 per stage from below 150; from
    ``start_re`` when starting from a solved flow: equal factors of at most 3)."""
    if start_re is not None:
        if start_re >= re:
            return [re]
        n = max(1, math.ceil(math.log(re / start_re) / math.log(3.0) - 1e-9))
        return [start_re * (re / start_re) ** (k / n) for k in range(1, n)] + [re]
    steps = [re]
    while steps[0] > 150:
        steps.insert(0, steps[0] / 3.0)
    return steps


def start_state(flow: NoseFlow, th: TaylorHood, prob: FlowProblem) -> FlowState:
    """``flow``'s velocity and pressure carried onto ``th``'s mesh (linear interpolation of
    the vertex values; a point just outside the source mesh, where the two polygons of the
    body differ, takes the nearest vertex's value), this problem's boundary values set."""
    from matplotlib.tri import LinearTriInterpolator, Triangulation
    from scipy.spatial import cKDTree

    if flow.state is None or flow.th is None:
        raise ValueError("start needs a flow solved with keep=True (it carries the fields)")
    src = flow.th.mesh
    nvert = src.p.shape[1]
    tri = Triangulation(src.p[0], src.p[1], src.t.T)
    finder = tri.get_trifinder()
    tree = cKDTree(src.p.T)

    def carry(values, points):
        values = np.asarray(values[:nvert], float)
        out = np.asarray(LinearTriInterpolator(tri, values, trifinder=finder)(
            points[0], points[1]).filled(np.nan))
        lost = ~np.isfinite(out)
        if lost.any():
            out[lost] = values[tree.query(points[:, lost].T)[1]]
        return out

    vx, px = np.asarray(th.V.doflocs), np.asarray(th.Q.doflocs)
    ux, uy, p = carry(flow.state.ux, vx), carry(flow.state.uy, vx), carry(flow.state.p, px)
    ux[prob.fixed], uy[prob.fixed] = prob.gx[prob.fixed], prob.gy[prob.fixed]
    return FlowState(ux, uy, p)


def solve_nose_flow(shape: NoseShape, size: SizeField, re: float, *, mode: str = "auto",
                    dt: float = DT, t_end: float = T_END, reporter=None,
                    keep: bool = True, mesh=None, start: NoseFlow | None = None,
                    state_dir=None, resume_from=None) -> NoseFlow:
    """Mesh the domain with ``size`` (or take ``mesh``), solve and measure.

    ``mode``: 'steady' (Newton, continuation in Re; an error when it does not converge),
    'unsteady' (BDF2 from rest over ``t_end``, coefficients averaged over its second half),
    'auto' (steady, and unsteady when Newton does not converge: the steady flow may not
    exist or not be reachable at this Re).

    ``start``: a steady flow of the same shape solved before (``keep=True``), on any mesh
    and at any Re: Newton starts from its fields carried onto this mesh and climbs from its
    Re (a Reynolds sweep, a finer grid after a coarse one: 3-5 Newton steps instead of
    about 20 at Re 3000). The converged flow is the same (Newton's tolerance); when Newton
    does not converge from it, the solve starts again from rest.

    ``state_dir`` (the job's run folder): the time-marching mode keeps its state there
    (``flow-state.npz``, as the cylinder's: :func:`~.dfg.keep_every` steps and when
    cancelled); ``resume_from`` (such a file) goes on from its step without the steady try,
    with a longer ``t_end`` if asked; another shape, Re, dt or grid is refused naming it
    (round 48 h7: a cancelled 30 H/U march started again from rest).
    """
    if mode not in ("auto", "steady", "unsteady"):
        raise ValueError(f"mode must be 'auto', 'steady' or 'unsteady', got {mode!r}")
    re = check_re(re)
    _check_start(start, shape)
    reporter = reporter or NullReporter()
    if resume_from is not None:      # refused before the mesh, naming the option (the grid's
        # cells and unknowns are compared once it is made)
        if mode == "steady":
            raise ValueError(f"cannot resume from {resume_from}: a kept state is of the "
                             f"time-marching mode (--flow unsteady or auto), not of a steady "
                             f"solve")
        from . import dfg

        dfg._check_kept(resume_from, dfg._kept(resume_from), _same(shape, re, dt),
                        int(round(t_end / dt)), dt, NOSE_SAME_AS, "shape, Re, dt and grid")
    t0 = time.perf_counter()
    mesh = mesh if mesh is not None else nose_mesh(shape, size)
    th = TaylorHood(mesh)
    prob = nose_problem(th, re)
    cells, dofs = int(mesh.t.shape[1]), int(th.dofs_total)
    reporter.log(f"train nose {shape.to_dict()}, Re {re:g}: {cells} triangles, {dofs} "
                 f"unknowns, mesh and matrices {time.perf_counter() - t0:.2f} s")
    st, newton, history, averages, record = None, 0, {}, {}, []
    keep_state = (state_dir, resume_from, {**_same(shape, re, dt), "cells": cells,
                                           "dofs": dofs})
    if mode in ("auto", "steady") and resume_from is None:
        try:
            st, newton = _steady(prob, re, start, th, reporter, record)
            used = "steady"
        except RuntimeError as exc:
            if mode == "steady":
                raise RuntimeError(f"the steady solve at Re {re:g} did not converge ({exc}); "
                                   "use the unsteady mode (time averages)") from None
            reporter.log(f"steady Newton did not converge at Re {re:g} ({exc}): marching in "
                         "time and averaging")
            st = None
        prob.nu = 1.0 / re
    if st is None:
        st, history, averages, steps = _march(prob, dt, t_end, reporter, keep_state)
        cd, cl = averages["cd_mean"], averages["cl_mean"]
        used = "unsteady"
        if averages["cd_error"] > 2e-3 * abs(cd) or averages["cl_error"] > 0.02 * max(
                abs(cl), 1.0):
            how = ("between the halves of the window: still settling or shedding slower than "
                   "the window holds" if averages["error_from"] == "halves" else
                   "over its periods")
            reporter.log(f"the time average over t {averages['window'][0]:.3g}.."
                         f"{averages['window'][1]:.3g} is uncertain: cd {cd:.4f} +- "
                         f"{averages['cd_error']:.2g}, cl {cl:.4f} +- "
                         f"{averages['cl_error']:.2g} ({how}); run longer: t_end="
                         f"{2 * t_end:g}", level="warning")
    else:
        steps = 0
        cd, cl = body_forces(prob, st)
    flow = NoseFlow(shape, re, cd, cl, cells, dofs, time.perf_counter() - t0, used,
                    newton_steps=newton, time_steps=steps, history=history,
                    averages=averages, newton=record)
    flow.cp = surface_cp(shape, th, st.p)
    if keep:
        nvert = mesh.p.shape[1]
        flow.mesh = (mesh.p, mesh.t)
        flow.fields = {"speed": np.hypot(st.ux[:nvert], st.uy[:nvert]),
                       "p": np.asarray(st.p[:nvert]) - _inlet_pressure(th, st.p),
                       "ux": np.asarray(st.ux[:nvert]), "uy": np.asarray(st.uy[:nvert])}
        flow.state, flow.th = st, th
    return flow


def _check_start(start, shape: NoseShape):
    if start is None:
        return
    if not isinstance(start, NoseFlow):
        raise TypeError(f"start takes a NoseFlow solved before, got {type(start).__name__}")
    if start.shape != shape:
        raise ValueError(f"start is a flow of another shape ({start.shape.to_dict()}); "
                         f"this solve is {shape.to_dict()}")
    if start.state is None or start.th is None:
        raise ValueError("start needs a flow solved with keep=True (it carries the fields)")


MIN_STEP = 1.15      # the smallest Re factor a failed continuation stage is cut down to
# a stage whose Newton update is still above 0.1 after this many steps is given up (the
# converging stages measured were below 0.05 by their fourth step; the diverging ones ~1)
STALL_AFTER = 5


def _copy(st: FlowState) -> FlowState:
    return FlowState(st.ux.copy(), st.uy.copy(), st.p.copy())


def _solves(st: FlowState) -> list:
    """Each Newton step's linear solve: ``"lu"`` (a factorisation) or the GMRES iterations
    with the kept LU (:class:`~.steady.NewtonSolves`)."""
    return [v if v == "lu" else int(v) for v in st.linear]


def _climb(prob: FlowProblem, stages: list, st, reporter, start_re: float | None = None,
           record: list | None = None):
    """Newton through ``stages``; a stage that does not converge is retried from the last
    converged Re with the step's factor square-rooted (x3 -> x1.73 -> x1.32), down to
    ``MIN_STEP``; then the stage's error is raised. ``record`` gets each stage tried:
    ``{'re', 'updates', 'tol', 'converged', 'solves'}``."""
    newton = 0
    done = start_re                      # the last converged Re
    queue = list(stages)
    record = [] if record is None else record
    while queue:
        stage = queue[0]
        prob.nu = 1.0 / stage
        last = len(queue) == 1
        tol = 1e-6 if last else STAGE_TOL
        # the state Newton updates in place: its history survives a failed stage
        trial = initial_state(prob) if st is None else _copy(st)
        taken = sum(len(r["updates"]) for r in record)
        try:
            new = solve_steady(prob, state=trial, tol=tol, maxiter=12,
                               picard=1 if st is None else 0, reporter=reporter,
                               stall_after=None if st is None else STALL_AFTER, step0=taken)
        except RuntimeError:
            record.append({"re": float(stage), "updates": [float(v) for v in trial.history],
                           "tol": tol, "converged": False, "solves": _solves(trial)})
            factor = stage / done if done else 0.0
            if st is None or done is None or factor < MIN_STEP ** 2:
                raise
            middle = done * math.sqrt(factor)
            reporter.log(f"Newton did not converge at Re {stage:.4g} from Re {done:.4g}: "
                         f"through Re {middle:.4g} first")
            queue.insert(0, middle)
            continue
        record.append({"re": float(stage), "updates": [float(v) for v in new.history],
                       "tol": tol, "converged": True, "solves": _solves(new)})
        newton += new.iterations
        st, done = new, stage
        queue.pop(0)
    return st, newton


def _steady(prob: FlowProblem, re: float, start, th, reporter, record=None):
    """Newton with the continuation in Re, from ``start`` when given (and from rest when
    Newton does not converge from it); ``(state, Newton steps)``; ``record``: each stage's
    Newton updates (:func:`_climb`)."""
    if start is not None and start.mode == "steady":
        try:
            return _climb(prob, _continuation(re, start.re), start_state(start, th, prob),
                          reporter, start_re=start.re, record=record)
        except RuntimeError as exc:
            reporter.log(f"Newton from the given start did not converge ({exc}): from rest")
    return _climb(prob, _continuation(re), None, reporter, record=record)


# what of a kept nose state a resumed run must share, as the options that set it
NOSE_SAME_AS = {"case": "the problem", "shape": "the shape (--length, --bluntness, "
                "--clearance, --profile)", "re": "--re", "dt": "--dt (BDF2's step before is "
                "at the kept dt)", "cells": "the grid (--adapt, --resolution: its cells)",
                "dofs": "the grid (its unknowns)"}


def _same(shape: NoseShape, re: float, dt: float) -> dict:
    """What a kept state must share with the run going on from it, before the mesh: the
    shape's parameters as plain numbers and names, Re, dt."""
    key = {k: (None if v is None else float(v) if isinstance(v, (int, float, np.number))
               else str(v)) for k, v in shape.to_dict().items()}
    return {"case": "train-nose", "shape": key, "re": float(re), "dt": float(dt)}


def _march(prob: FlowProblem, dt: float, t_end: float, reporter, keep=(None, None, None)):
    """BDF2 from rest with the inflow and the ground ramped up over one time unit; the
    coefficients' time averages over the second half of the run. ``keep``: ``(folder,
    file, same)`` as the cylinder's (:func:`~.dfg._march`): the folder its state is kept in,
    a kept state to go on from, what that state must match (round 48 h7)."""
    from pathlib import Path

    from skiff.kernels.backend.report import JobCancelled

    from . import dfg

    th = prob.th
    gx = prob.gx.copy()
    zero = np.zeros(th.nv)

    def boundary(t):
        r = np.sin(0.5 * np.pi * min(t, 1.0)) ** 2
        return r * gx, zero

    stepper = Stepper(prob, dt, boundary, th.pressure_dofs("outlet"))
    steps = int(round(t_end / dt))
    rec = np.zeros((steps, 3))
    every = max(1, steps // 100)
    folder, resume_from, same = keep
    st0 = FlowState(np.zeros(th.nv), np.zeros(th.nv), np.zeros(th.np))
    prev, start = None, 0
    if resume_from:
        kept = dfg._kept(resume_from)
        dfg._check_kept(resume_from, kept, same, steps, stepper.dt, NOSE_SAME_AS,
                        "shape, Re, dt and grid")
        start = int(kept["step"])
        st0 = FlowState(kept["ux"], kept["uy"], kept["p"])
        if bool(kept["has_prev"]):
            prev = FlowState(kept["prev_ux"], kept["prev_uy"], kept["prev_p"])
        rec[:start] = kept["history"]
        reporter.log(f"going on from step {start} of {steps} (t = {start * stepper.dt:.4g}), "
                     f"kept in {resume_from}")
    path = None if folder is None else Path(folder) / dfg.STATE_FILE
    cadence = dfg.keep_every(steps)
    held = [(start, st0, prev)]        # (step, state, the state before it): one assignment

    def on_step(n, t, s):
        cd, cl = body_forces(prob, s, dudt=s.dudt)
        rec[n - 1] = (t, cd, cl)
        held[0] = (n, s, held[0][1])
        if path is not None and n % cadence == 0 and n < steps:
            dfg._keep_state(path, n, s, held[0][2], rec, same)
        if n % every == 0 or n == steps:
            reporter.metrics({"cd": cd, "cl": cl}, step=n)
            reporter.progress(n, steps, unit="time step",
                              message=f"t = {t:.2f}: cd {cd:.4f}, cl {cl:.4f}")

    try:
        st = run_steps(stepper, st0, steps, on_step=on_step, reporter=reporter, prev=prev,
                       start=start)
    except JobCancelled:
        dfg.keep_at_stop(path, held[0], rec, same, steps, reporter)
        raise
    history = {"t": rec[:, 0], "cd": rec[:, 1], "cl": rec[:, 2]}
    return st, history, time_averages(rec[:, 0], rec[:, 1], rec[:, 2]), steps


def _mean_over(t, f, a, b):
    """The mean of the piecewise-linear ``f(t)`` over ``[a, b]`` (exact for the samples)."""
    inside = (t > a) & (t < b)
    tt = np.concatenate([[a], t[inside], [b]])
    ff = np.concatenate([[np.interp(a, t, f)], f[inside], [np.interp(b, t, f)]])
    return float(np.sum(0.5 * (ff[1:] + ff[:-1]) * np.diff(tt)) / (b - a))


def time_averages(t, cd, cl) -> dict:
    """The coefficients' averages over the second half of the run, with their uncertainty.

    When the lift sheds periodically there (:func:`~.dfg.up_crossings`, at least two whole
    periods of regular length), the averages are over the whole periods only, from the first
    upward crossing to the last: a window that ends inside a period is biased by up to
    ``A T / (pi L)`` (amplitude ``A``, period ``T``, window ``L``). ``cd_error`` is then the
    standard error of the per-period means (``error_from: 'periods'``, with ``periods``,
    ``period`` in H/U and ``st = H / (U T)``). Otherwise the mean of the whole window, and
    ``cd_error`` is half the difference of its two halves' means (``'halves'``: the drift
    of a flow still settling)."""
    from .dfg import regular, up_crossings

    t, cd, cl = (np.asarray(v, float) for v in (t, cd, cl))
    half = t >= 0.5 * t[-1]
    tw, dw, lw = t[half], cd[half], cl[half]
    out = {"cd_rms": float(dw.std()), "cl_rms": float(lw.std())}
    tz = up_crossings(tw, lw)
    if regular(tz) and len(tz) >= 3:
        per = {k: np.array([_mean_over(tw, f, a, b) for a, b in zip(tz[:-1], tz[1:])])
               for k, f in (("cd", dw), ("cl", lw))}
        out.update({f"{k}_mean": _mean_over(tw, f, tz[0], tz[-1])
                    for k, f in (("cd", dw), ("cl", lw))})
        out.update({f"{k}_error": float(v.std(ddof=1) / np.sqrt(len(v)))
                    for k, v in per.items()})
        period = float(np.mean(np.diff(tz)))
        out.update(error_from="periods", periods=len(tz) - 1, period=period,
                   st=1.0 / period, window=[float(tz[0]), float(tz[-1])])
        return out
    mid = len(tw) // 2
    out.update({"cd_mean": float(dw.mean()), "cl_mean": float(lw.mean()),
                "cd_error": 0.5 * abs(float(dw[:mid].mean() - dw[mid:].mean())) if mid else
                0.0,
                "cl_error": 0.5 * abs(float(lw[:mid].mean() - lw[mid:].mean())) if mid else
                0.0,
                "error_from": "halves", "window": [float(tw[0]), float(tw[-1])]})
    return out

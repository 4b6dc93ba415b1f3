"""``Solution``: the field with its convergence record, a notebook view and file export."""

from __future__ import annotations

import base64
import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Solution", "write_vtk", "field_figure", "convergence_figure"]


# what each number of :meth:`Solution.summary` (a job's result, ``--json``) is measured in
_UNITS = {
    "relative_residual": "|b - A x| / |b| of the returned x (recomputed, not the recurrence's)",
    "residuals": "|r| / |b| per iteration, the method's own residual, initial first",
    "error": "max over the cells of |u - u_exact|, in u's units (null: no exact solution)",
    "time_s": "s (the solve)", "setup_time_s": "s (the solver's setup)",
    "bandwidth_GBps": "GB/s (bytes the kernels must move / solve time)",
    "shape": "cells per axis (x, y[, z])",
}


@dataclass
class Solution:
    """The result of a solve.

    Attributes
    ----------
    field : numpy array
        The solution, shaped as the grid (or 1D for a matrix system), on the host.
    residuals : list of float
        Residual norms, initial first (relative: divide by ``bnorm``).
    iterations : int
    converged : bool
    time : float
        Seconds of the solve (``setup_time`` separately).
    device : str
    method, precond : str
    bandwidth : float
        Achieved memory bandwidth of the solve, GB/s (bytes the kernels must move / time).
    error : float or None
        Max error against the exact solution, when the problem has one.
    status : str
        'converged', or why not: 'maxiter: ...' (the iteration limit was reached before the
        tolerance; ``converged`` is False and no exception is raised unless ``strict=True``),
        or 'attainable accuracy: ...' (the solver's residual passed a tolerance below what
        float64 reaches, and the true residual did not).
    cycles : int or None
        GMRES's restart cycles (``maxiter`` counts them, as SciPy's); None for other methods.
    breakdown : int or None
        SciPy's negative ``info`` when the method broke down (BiCGStab: -10 rho, -11 the
        others): the solve returns the iterate it stopped at, not converged, as SciPy's
        ``bicgstab`` does (``strict=True`` raises ``SolveError`` instead).
    columns : list of Solution or None
        For several right-hand sides (``b`` of shape ``(n, k)``, as SciPy's ``spsolve(A,
        B)``): each column's own solution; ``field`` and ``x`` are then ``(n, k)``,
        ``iterations`` and ``relative_residual`` the largest of the columns', ``converged``
        whether all did, ``time`` their sum (:func:`stack_columns`).
    true_residual : float or None
        ``|b - A x| / |b|`` recomputed from the returned ``x`` (one product after the solve);
        :attr:`relative_residual` reports it. A Krylov method updates its residual by
        recurrence, which can pass any tolerance (1e-21 for rtol=1e-20) while the true one
        stays near 1e-16 times the condition number.
    """

    field: np.ndarray
    residuals: list
    iterations: int
    converged: bool
    time: float
    setup_time: float = 0.0
    device: str = "cpu"
    method: str = ""
    precond: str = ""
    bnorm: float = 1.0
    bytes_moved: float = 0.0
    error: float | None = None
    problem: str = ""
    extent: tuple | None = None
    info: dict = field(default_factory=dict)
    status: str = ""
    true_residual: float | None = None
    cycles: int | None = None
    breakdown: int | None = None
    columns: list | None = None
    # a grid's active cells (GridProblem.mask: False outside the domain, e.g. inside an sdf
    # body), shaped as ``field``; None: every cell. The field plot leaves the others blank
    active: np.ndarray | None = field(default=None, repr=False)

    @property
    def scipy_info(self) -> int:
        """scipy.sparse.linalg's ``info``: 0 when converged, else the iterations done (for
        GMRES the restart cycles done, as SciPy's gmres counts them), and SciPy's negative
        code after a breakdown (:attr:`breakdown`)."""
        if self.breakdown is not None:
            return self.breakdown
        if self.converged:
            return 0
        return max(self.cycles if self.cycles is not None else self.iterations, 1)

    def __iter__(self):
        """``x, info = skiff.solve(A, b)``: SciPy's pair (``x`` flat, ``info`` as
        :attr:`scipy_info`), so code written for ``scipy.sparse.linalg.cg`` unpacks it; it
        raised "'Solution' object is not iterable"."""
        return iter((self.x, self.scipy_info))

    @property
    def x(self) -> np.ndarray:
        """The solution as a flat vector (scipy's ``x``); ``(n, k)`` for ``k`` right-hand
        sides."""
        return self.field if self.columns is not None else self.field.ravel()

    @property
    def on_grid(self) -> bool:
        """Whether ``field`` is a grid's (2-D or 3-D), not a matrix system's vector(s)."""
        return self.field.ndim >= 2 and self.columns is None

    @property
    def relative_residual(self) -> float:
        if self.true_residual is not None:
            return self.true_residual
        return self.residuals[-1] / self.bnorm if self.bnorm else self.residuals[-1]

    @property
    def bandwidth(self) -> float:
        return self.bytes_moved / self.time / 1e9 if self.time > 0 else 0.0

    def summary(self) -> dict:
        """JSON-able facts (what a job stores as its result)."""
        return {
            "problem": self.problem, "shape": list(self.field.shape), "method": self.method,
            "precond": self.precond, "device": self.device, "iterations": self.iterations,
            "converged": self.converged, "status": self.status,
            "relative_residual": self.relative_residual,
            "time_s": self.time, "setup_time_s": self.setup_time,
            "bandwidth_GBps": self.bandwidth, "error": self.error,
            "residuals": [r / (self.bnorm or 1.0) for r in self.residuals], **self.info,
            "units": dict(_UNITS),
        }

    def to_json(self) -> dict:
        return self.summary()

    def __repr__(self) -> str:
        state = "converged" if self.converged else "NOT converged"
        shape = "x".join(map(str, self.field.shape))
        err = f", error {self.error:.2e}" if self.error is not None else ""
        ranks = int(self.info.get("ranks", 1) or 1)
        where = self.device + (f" x {ranks} ranks" if ranks > 1 else "")
        return (f"<Solution {self.problem or 'system'} {shape}: {self.method}+{self.precond} "
                f"{state} in {self.iterations} it, |r|/|b| = {self.relative_residual:.2e}, "
                f"{self.time * 1e3:.1f} ms (+{self.setup_time * 1e3:.1f} ms setup) on "
                f"{where}, {self.bandwidth:.1f} GB/s{err}>")

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))

    def _repr_html_(self) -> str:
        imgs = []
        if self.on_grid:
            imgs.append(_png(field_figure(self)))
        imgs.append(_png(convergence_figure(self)))
        tags = "".join(f'<img src="data:image/png;base64,{b}" style="max-width:48%;'
                       f'margin-right:1%"/>' for b in imgs)
        return f"<div><code>{html.escape(repr(self))}</code><div>{tags}</div></div>"

    def plot(self, what: str = "both", path=None):
        """The labelled figures (matplotlib's object API: no display or pyplot needed):
        ``what`` 'field' (a heatmap, the z mid-slice in 3D), 'convergence' (|r|/|b| per
        iteration) or 'both' (a tuple of the two; the convergence alone for a matrix's
        vector). ``path``: also write the one figure asked for as a PNG there."""
        if what not in ("field", "convergence", "both"):
            raise ValueError(f"what must be 'field', 'convergence' or 'both', got {what!r}")
        if what == "field" and not self.on_grid:
            raise ValueError(f"the field of a matrix system is a vector (shape "
                             f"{self.field.shape}), not a grid: plot 'convergence'")
        if what == "both":
            if path is not None:
                raise ValueError("path= writes one figure: give what='field' or "
                                 "'convergence'")
            figs = (field_figure(self),) if self.on_grid else ()
            return figs + (convergence_figure(self),)
        fig = field_figure(self) if what == "field" else convergence_figure(self)
        if path is not None:
            save_png(fig, path)
        return fig

    @classmethod
    def load(cls, path) -> Solution:
        """A Solution written by :meth:`save` as ``.npz`` (field, residual history, record)."""
        path = Path(path)
        if path.suffix.lower() != ".npz":
            raise ValueError(f"Solution.load reads the .npz files Solution.save writes, got "
                             f"{path.name!r} (a .vtk file is for ParaView)")
        with np.load(path, allow_pickle=False) as data:
            if "field" not in data or "summary" not in data:
                raise ValueError(f"{path.name}: not a skiff Solution file (no field/summary)")
            fld = np.array(data["field"])
            residuals = [float(r) for r in data["residuals"]]
            summary = json.loads(str(data["summary"]))
            bnorm = float(data["bnorm"]) if "bnorm" in data else None
            extent = tuple(float(e) for e in data["extent"]) if "extent" in data else None
            # the bytes themselves (bandwidth x time gave the bandwidth back a last digit off)
            moved = float(data["bytes_moved"]) if "bytes_moved" in data else None
        if bnorm is None:   # files written before bnorm was stored: from the relative history
            rel = summary.get("residuals") or []
            bnorm = residuals[0] / rel[0] if rel and rel[0] else 1.0
        known = {"problem", "shape", "method", "precond", "device", "iterations", "converged",
                 "status", "relative_residual", "time_s", "setup_time_s", "bandwidth_GBps",
                 "error", "residuals", "units"}
        time_s = float(summary.get("time_s") or 0.0)
        return cls(field=fld, residuals=residuals,
                   iterations=int(summary.get("iterations", len(residuals) - 1)),
                   converged=bool(summary.get("converged")), time=time_s,
                   setup_time=float(summary.get("setup_time_s") or 0.0),
                   device=summary.get("device", "cpu"), method=summary.get("method", ""),
                   precond=summary.get("precond", ""), bnorm=bnorm,
                   bytes_moved=moved if moved is not None else
                   float(summary.get("bandwidth_GBps") or 0.0) * time_s * 1e9,
                   error=summary.get("error"), problem=summary.get("problem", ""),
                   extent=extent, status=summary.get("status", ""),
                   true_residual=summary.get("relative_residual"),
                   info={k: v for k, v in summary.items() if k not in known})

    # ------------------------------------------------------------------ export
    def save(self, path, *, format: str | None = None) -> Path:
        """Write ``path``: ``.npz`` (field and record) or ``.vtk`` (legacy structured points,
        binary; readable by ParaView). ``format`` overrides the suffix ('npz', 'vtk',
        'vtk-ascii')."""
        path = Path(path)
        fmt = format or path.suffix.lstrip(".").lower()
        if fmt == "npz":
            extra = {} if self.extent is None else {"extent": np.asarray(self.extent, float)}
            np.savez_compressed(path, field=self.field, residuals=np.asarray(self.residuals),
                                bnorm=np.float64(self.bnorm),
                                bytes_moved=np.float64(self.bytes_moved), **extra,
                                summary=json.dumps(self.summary(), default=str))
        elif fmt in ("vtk", "vtk-ascii"):
            if self.field.ndim not in (2, 3) or not self.on_grid:
                raise ValueError(f"VTK export needs a 2D or 3D grid field, got shape "
                                 f"{self.field.shape}")
            spacing = None
            if self.extent:
                spacing = [e / n for e, n in zip(self.extent, self.field.shape)]
            write_vtk(path, self.field, spacing=spacing, binary=fmt == "vtk")
        else:
            raise ValueError(f"unknown format {fmt!r}: choose from npz, vtk, vtk-ascii")
        return path


def stack_columns(solutions: list) -> Solution:
    """One :class:`Solution` for the columns of ``B`` (each column's own in ``columns``):
    ``x`` is ``(n, k)``; the worst column speaks for the whole (its residual history,
    status, iterations), ``converged`` when every column is, times summed."""
    if not solutions:
        raise ValueError("stack_columns: no solutions")
    worst = max(solutions, key=lambda s: (not s.converged, s.relative_residual, s.iterations))
    bad = [j for j, s in enumerate(solutions) if not s.converged]
    status = ("converged" if not bad else
              f"column {bad[0]} of {len(solutions)}: {solutions[bad[0]].status}")
    breaks = [s.breakdown for s in solutions if s.breakdown is not None]
    cycles = [s.cycles for s in solutions if s.cycles is not None]
    info = dict(worst.info)
    info.update(columns=len(solutions),
                column_iterations=[s.iterations for s in solutions],
                column_relative_residuals=[s.relative_residual for s in solutions])
    return Solution(
        field=np.column_stack([s.field.ravel() for s in solutions]),
        residuals=list(worst.residuals), iterations=max(s.iterations for s in solutions),
        converged=not bad, time=sum(s.time for s in solutions),
        setup_time=solutions[0].setup_time, device=worst.device, method=worst.method,
        precond=worst.precond, bnorm=worst.bnorm,
        bytes_moved=sum(s.bytes_moved for s in solutions), problem=worst.problem,
        info=info, status=status,
        true_residual=max(s.relative_residual for s in solutions),
        cycles=max(cycles) if cycles else None, breakdown=breaks[0] if breaks else None,
        columns=list(solutions))


def write_vtk(path, u, *, spacing=None, binary=True, name="u") -> None:
    """Legacy VTK STRUCTURED_POINTS with the cell-centred values as point data."""
    u = np.asarray(u, dtype=np.float64)
    shape = list(u.shape) + [1] * (3 - u.ndim)
    h = list(spacing or [1.0 / n for n in u.shape]) + [1.0] * (3 - u.ndim)
    origin = [0.5 * hh for hh in h]
    header = (f"# vtk DataFile Version 3.0\nskiff solution\n{'BINARY' if binary else 'ASCII'}\n"
              f"DATASET STRUCTURED_POINTS\nDIMENSIONS {shape[0]} {shape[1]} {shape[2]}\n"
              f"ORIGIN {origin[0]:g} {origin[1]:g} {origin[2]:g}\n"
              f"SPACING {h[0]:g} {h[1]:g} {h[2]:g}\nPOINT_DATA {u.size}\n"
              f"SCALARS {name} double 1\nLOOKUP_TABLE default\n")
    values = u.reshape(shape).transpose(2, 1, 0).ravel()    # VTK: x fastest
    with open(path, "wb") as fh:
        fh.write(header.encode("ascii"))
        if binary:
            fh.write(values.astype(">f8").tobytes())
            fh.write(b"\n")
        else:
            fh.write(("\n".join(f"{v:.17g}" for v in values) + "\n").encode("ascii"))


def field_figure(sol: Solution):
    """Heatmap of the field (the middle slice of a 3D field) as a matplotlib Figure."""
    from matplotlib.figure import Figure

    u = sol.field
    active = None
    if sol.active is not None and np.size(sol.active) == u.size:
        active = np.asarray(sol.active, dtype=bool).reshape(u.shape)
    title = sol.problem or "solution"
    if u.ndim == 3:
        u = u[:, :, u.shape[2] // 2]
        active = None if active is None else active[:, :, active.shape[2] // 2]
        title += " (z mid-slice)"
    if active is not None and not active.all():
        # cells outside the domain are no part of the solution: blank, not drawn as 0 (a
        # disc cut out looked like a region of u = 0)
        u = np.ma.masked_where(~active, u)
    fig = Figure(figsize=(4.2, 3.6), dpi=90)
    ax = fig.add_subplot()
    ext = None
    if sol.extent:
        ext = (0, sol.extent[0], 0, sol.extent[1])
    im = ax.imshow(u.T, origin="lower", extent=ext, cmap="viridis", aspect="auto")
    bar = fig.colorbar(im, ax=ax)
    bar.set_label("u" + (" (blank: outside the domain)" if np.ma.isMaskedArray(u) else ""))
    ax.set_title(title)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    return fig  # laid out when rendered (skiff.kernels.backend.figures.render_png)


def convergence_figure(sol: Solution):
    """Relative residual per iteration (log scale) as a matplotlib Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2, 3.6), dpi=90)
    ax = fig.add_subplot()
    res = np.asarray(sol.residuals, dtype=float) / (sol.bnorm or 1.0)
    res = np.where(res > 0, res, np.nan)
    ax.semilogy(np.arange(len(res)), res, marker="o", ms=3)
    ax.set_xlabel("iteration")
    ax.set_ylabel("|r| / |b|")
    ax.set_title(f"{sol.method}+{sol.precond}: {sol.iterations} it")
    ax.grid(True, which="both", alpha=0.3)
    return fig  # laid out when rendered (skiff.kernels.backend.figures.render_png)


def save_png(fig, path) -> Path:
    from skiff.kernels.backend.figures import render_png

    _canvas(fig)
    render_png(fig, path)
    return Path(path)


def _canvas(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)


def _png(fig) -> str:
    from skiff.kernels.backend.figures import render_png

    _canvas(fig)
    return base64.b64encode(render_png(fig)).decode("ascii")


def _finite_or_none(x):
    return x if x is not None and math.isfinite(x) else None

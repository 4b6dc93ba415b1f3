"""Plots of a train-nose solve: the fields, the grid, the surface pressure coefficient, and
grids side by side (matplotlib's object API, rendered through the one drawing lock)."""

from __future__ import annotations

import base64
import html

__all__ = ["fields_figure", "grid_figure", "cp_figure", "grids_figure", "html_view",
           "convergence_figure"]


def _tri(flow):
    from matplotlib.tri import Triangulation

    p, t = flow.mesh
    return Triangulation(p[0], p[1], t.T)


def _zoom(ax, flow):
    s = flow.shape
    ax.set_xlim(-1.0, s.length + 2.5)
    ax.set_ylim(0.0, s.clearance + 1.8)
    ax.set_aspect("equal")
    ax.tick_params(labelsize=7)


def fields_figure(flow):
    """Speed and pressure coefficient near the nose."""
    from skiff.kernels.backend.figures import new_figure

    fig = new_figure(figsize=(9.0, 5.0), dpi=90)
    tri = _tri(flow)
    for k, (name, label, scale) in enumerate((("speed", "|u| / U", 1.0),
                                              ("p", "cp", 2.0))):
        ax = fig.add_subplot(2, 1, k + 1)
        im = ax.tripcolor(tri, scale * flow.fields[name], shading="gouraud", cmap="viridis")
        fig.colorbar(im, ax=ax, fraction=0.03)
        _zoom(ax, flow)
        ax.set_xlabel("x / H", fontsize=8)   # lengths in train heights (nose.py)
        ax.set_ylabel("y / H", fontsize=8)
        ax.set_title(f"{label} (Re {flow.re:g}{', last step' if flow.mode == 'unsteady' else ''})",
                     fontsize=9)
    return fig


def grid_figure(flow, ax=None, title=None):
    """The triangles near the nose."""
    from skiff.kernels.backend.figures import new_figure

    fig = None
    if ax is None:
        fig = new_figure(figsize=(9.0, 3.6), dpi=90)
        ax = fig.add_subplot(1, 1, 1)
    ax.triplot(_tri(flow), lw=0.2, color="k")
    _zoom(ax, flow)
    ax.set_xlabel("x / H", fontsize=8)
    ax.set_ylabel("y / H", fontsize=8)
    ax.set_title(title or f"{flow.adapt or 'given'} grid: {flow.cells} cells, cd "
                          f"{flow.cd:.4f}", fontsize=9)
    return fig


def grids_figure(flows: dict):
    """Several grids of one shape side by side: ``{label: NoseFlow}``."""
    from skiff.kernels.backend.figures import new_figure

    fig = new_figure(figsize=(4.0 * len(flows), 3.4), dpi=90)
    for k, (label, flow) in enumerate(flows.items()):
        ax = fig.add_subplot(1, len(flows), k + 1)
        grid_figure(flow, ax, f"{label}: {flow.cells} cells, cd {flow.cd:.4f}")
    return fig


def cp_figure(flow):
    """``cp`` along the surface against the arc length from the tip."""
    from skiff.kernels.backend.figures import new_figure

    fig = new_figure(figsize=(9.0, 3.4), dpi=90)
    ax = fig.add_subplot(1, 1, 1)
    import numpy as np

    cp = flow.cp
    s, x, c = (np.asarray(cp[k], float) for k in ("s", "x", "cp"))
    ax.plot(s, c, lw=0.9, label="cp")
    ax.axvline(0.0, color="0.6", lw=0.6)
    ax.axhline(0.0, color="0.6", lw=0.6)
    # where the nose ends: the first surface point on each side at the shoulder's x
    length = flow.shape.length
    ends = [-length, length]
    for k, (side, name) in enumerate(((s < 0, "floor"), (s > 0, "roof"))):
        at = side & (x >= length - 1e-9)
        if at.any():
            ends[k] = s_sh = s[at][np.argmin(np.abs(s[at]))]
            ax.axvline(s_sh, color="tab:green", lw=0.8, ls=":")
            ax.annotate(f"{name} shoulder", (s_sh, 0.92), xycoords=("data", "axes fraction"),
                        fontsize=7, color="tab:green", ha="center")
    near = (s >= ends[0]) & (s <= ends[1])                     # the nose, shoulder to shoulder
    if near.any():
        k = np.flatnonzero(near)[np.argmax(c[near])]
        ax.plot(s[k], c[k], "v", color="tab:red", ms=5,
                label=f"highest cp on the nose {c[k]:.3f} at s = {s[k]:.3f}")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlim(-length - 2, length + 2)
    ax.invert_yaxis()
    ax.set_xlabel("arc length s from the tip (floor side < 0 < roof side), H")
    ax.set_ylabel("cp  (axis inverted: suction up)")
    ax.grid(True, alpha=0.3)
    mean = flow.mode == "unsteady"
    ax.set_title(f"surface pressure coefficient{' (last step)' if mean else ''}, Re "
                 f"{flow.re:g}: cd {flow.cd:.4f}, cl {flow.cl:.4f}", fontsize=9)
    return fig


def history_figure(flow):
    from skiff.kernels.backend.figures import new_figure

    fig = new_figure(figsize=(9.0, 3.0), dpi=90)
    for k, name in enumerate(("cd", "cl")):
        ax = fig.add_subplot(1, 2, k + 1)
        ax.plot(flow.history["t"], flow.history[name], lw=0.8)
        ax.axhline(flow.averages[f"{name}_mean"], color="tab:red", lw=0.8, label="average")
        ax.set_xlabel("t (H / U)")
        ax.set_ylabel(name)
        ax.legend(fontsize=7)
        ax.grid(True, alpha=0.3)
    return fig


def convergence_figure(flow):
    """Newton's updates ``|du| / |u|`` against the step, stage by stage of the continuation
    in Re (a stage that failed in grey, then its retry), with each stage's tolerance."""
    from skiff.kernels.backend.figures import new_figure

    fig = new_figure(figsize=(9.0, 3.4), dpi=90)
    ax = fig.add_subplot(1, 1, 1)
    step = 0
    for stage in flow.newton:
        ups = stage["updates"]
        steps = list(range(step + 1, step + len(ups) + 1))
        ok = stage["converged"]
        if ups:
            ax.semilogy(steps, ups, "o-", ms=3, lw=0.9, color=None if ok else "0.6",
                        label=f"Re {stage['re']:.4g}" + ("" if ok else " (failed)"))
            ax.hlines(stage["tol"], steps[0] - 0.4, steps[-1] + 0.4, colors="0.4", lw=0.6,
                      linestyles=":")
        step += len(ups)
    ax.set_xlabel("Newton step (all stages)")
    ax.set_ylabel("|du| / |u|")
    ax.grid(True, which="both", alpha=0.3)
    if flow.newton:                 # beside the axes: the curves fill them
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.subplots_adjust(right=0.8)
    ax.set_title(f"Newton's convergence, continuation in Re to {flow.re:g} (dotted: each "
                 f"stage's tolerance)", fontsize=9)
    return fig


def _png(fig) -> str:
    from skiff.kernels.backend.figures import render_png

    return base64.b64encode(render_png(fig)).decode("ascii")


def html_view(flow) -> str:
    err = flow.averages if flow.mode == "unsteady" else {}

    def pm(name):                       # a time average shows its uncertainty
        value = f"{getattr(flow, name):.5g}"
        e = err.get(f"{name}_error")
        return value if e is None else f"{value} &plusmn; {e:.2g} (time-averaged)"

    rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in (
        ("cd", pm("cd")), ("cl", pm("cl")), ("cells", flow.cells),
        ("unknowns", flow.dofs), ("mode", flow.mode), ("seconds", f"{flow.seconds:.2f}")))
    figs = [] if flow.mesh is None else [fields_figure(flow), grid_figure(flow)]
    if flow.cp:
        figs.append(cp_figure(flow))
    if flow.history:
        figs.append(history_figure(flow))
    imgs = "".join(f'<img src="data:image/png;base64,{_png(f)}" style="max-width:100%"/>'
                   for f in figs)
    return (f"<div><code>{html.escape(repr(flow))}</code><table>{rows}</table>"
            f"<div>{imgs}</div></div>")



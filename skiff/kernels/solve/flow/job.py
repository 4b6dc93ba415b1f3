"""The ``%solve cylinder`` job: run a DFG case from a config, report, write the PNG plots."""

from __future__ import annotations

from skiff.kernels.backend.figures import render_png
from skiff.kernels.backend.report import NullReporter, Reporter

from .dfg import run_case
from .export import save_in_job
from .result import FlowResult, convergence_figure, fields_figure, history_figure, mesh_figure

__all__ = ["run"]


def run(config: dict, reporter: Reporter | None = None) -> FlowResult:
    """Config keys: ``case``, ``resolution``, ``re``, ``dt``, ``t_end`` (None: the case's),
    ``device`` (where an unsteady case's linear solves run), ``save`` (a path the flow is
    written to: :meth:`~.result.FlowResult.save`), ``channel`` (another channel around the
    cylinder, a dict: :func:`~.dfg.run_case`; the grammar has no option for it yet),
    ``resume_from`` (a cancelled unsteady run's ``RUN/flow-state.npz``: ``jobs resume`` goes
    on from it; round 47 h21). An unsteady case keeps its state in the run folder as it
    goes and when cancelled (:data:`~.dfg.STATE_FILE`)."""
    reporter = reporter or NullReporter()
    run_dir = getattr(reporter, "run_dir", None)
    res = run_case(config.get("case") or "2d-1", resolution=config.get("resolution"),
                   re=config.get("re"), dt=config.get("dt"), t_end=config.get("t_end"),
                   reporter=reporter, device=config.get("device") or "cpu",
                   channel=config.get("channel"), state_dir=run_dir,
                   resume_from=config.get("resume_from"))
    reporter.log(repr(res))
    reporter.log(f"linear solves {res.linear_seconds:.2f} s of {res.seconds:.2f} s "
                 f"({100 * res.linear_share:.0f}%); {res.method}")
    reporter.info(**{k: v for k, v in res.to_json().items() if k != "bands"})
    if run_dir is not None:
        out = run_dir / "artifacts"
        out.mkdir(exist_ok=True)
        figures = [("fields", fields_figure), ("mesh", mesh_figure)]
        if res.history:
            figures.append(("history", history_figure))
        if res.details.get("newton_updates"):        # a steady case: Newton's updates
            figures.append(("convergence", convergence_figure))
        for name, draw in figures:
            path = out / f"{name}.png"
            render_png(draw(res), path)
            reporter.artifact(name, path, kind="image")
    if config.get("save"):     # .vtu / .vtk, .npz, .csv, .history.csv, .json: never fails the job
        save_in_job(res, config["save"], reporter)
    return res

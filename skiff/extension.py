"""``%load_ext skiff``: registers the magics and how a Job shows itself in a notebook (the
live widget). Nothing heavy is imported until a magic runs or a job is shown."""

from __future__ import annotations

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython) -> None:
    from skiff.magics import magics_classes, register_kind_magics

    for cls in magics_classes():
        ipython.register_magics(cls)
    register_kind_magics(ipython)
    from skiff.magics import typo

    typo.install(ipython)  # %slove: "... not found (did you mean %solve?)."
    # a Job displays as its live widget; skiff.jobs never imports the widgets
    formatter = ipython.display_formatter.ipython_display_formatter
    formatter.for_type_by_name("skiff.jobs.job", "Job", _display_job)


def _display_job(job) -> None:
    from skiff.widgets.display import display_job

    shown = job.__dict__.pop("_shown_in_cell", None)
    if shown is not None:  # the magic that started it showed it before it started: once
        from IPython import get_ipython

        ip = get_ipython()
        if ip is not None and shown == ip.execution_count:
            return
    display_job(job)


def unload_ipython_extension(ipython) -> None:
    from skiff.magics import typo

    typo.uninstall(ipython)

"""Show a job: the live widget where a widget front end is connected, else HTML/text."""

from __future__ import annotations

__all__ = ["display_job", "widgets_enabled"]


def widgets_enabled() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def display_job(job) -> None:
    from IPython.display import display

    if widgets_enabled():
        try:
            from skiff.widgets.job_view import view_for
        except ImportError:
            view_for = None
        if view_for is not None:
            display(view_for(job))  # the same live widget each time the job is shown
            return
    # the HTML with the terminal's text beside it: a front end that shows no HTML (IPython
    # in a terminal, a notebook saved as text) printed "<IPython.core.display.HTML object>"
    # for every job a magic started or showed (round 40)
    try:
        text = job_text(job)
    except Exception:  # noqa: BLE001 - a display must not fail: its one line then
        text = repr(job)
    display({"text/plain": text, "text/html": job._repr_html_()}, raw=True)


def job_text(job) -> str:
    """What ``python -m skiff jobs show ID`` prints of ``job``, in ``%jobs`` words."""
    from skiff.jobs.render import describe
    from skiff.jobs.terminal import running_lines

    text = "\n".join([describe(job, front="magic"), *running_lines(job, front="magic")])
    run_dir = getattr(job, "run_dir", None)
    if run_dir is not None and not run_dir.is_dir() and \
            "was removed while it ran" not in str(getattr(job, "error", "") or ""):
        # `%jobs rm` of it, then its variable shown: its command alone, as if nothing came of
        # it (the result's lines are read from the folder)
        text += (f"\n  its run folder {run_dir} is gone (removed or moved): its result and "
                 "log went with it")
    return text

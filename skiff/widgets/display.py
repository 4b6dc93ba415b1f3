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
    from IPython.display import HTML, display

    if widgets_enabled():
        try:
            from skiff.widgets.job_view import view_for
        except ImportError:
            view_for = None
        if view_for is not None:
            display(view_for(job))  # the same live widget each time the job is shown
            return
    display(HTML(job._repr_html_()))

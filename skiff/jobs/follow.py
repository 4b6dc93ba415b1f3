"""Following a job until it ends: one progress line, refreshed at a bounded rate, and Ctrl-C
cancels. The magics (``--wait``, ``%jobs wait``) and the CLI share it; each passes how a line
is shown (an updatable notebook display, or a carriage-return line on a terminal)."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["follow", "progress_line"]


def progress_line(job) -> str:
    """``ID status pct metric message`` for a job, at most 120 characters (control
    characters in the job's message shown escaped)."""
    from .terminal import clean

    state = job.state
    pct = f" {100 * state.fraction:5.1f}%" if state.fraction is not None else ""
    metric = ""
    for name in () if state.message else ("loss", "residual", "value"):
        value = state.last(name)
        if isinstance(value, (int, float)):
            metric = f" {name} {value:.4g}"
            break
    return clean(f"{job.id} {state.status}{pct}{metric} {state.message or ''}".rstrip())[:120]


def follow(job, show: Callable[[str], None] | None = None, *, quiet_s: float = 2.0,
           rate: float = 2.0, on_interrupt: Callable[[], None] | None = None,
           line: Callable[[object], str] = progress_line):
    """Block until ``job`` ends; returns it.

    Silent for ``quiet_s`` seconds, then ``show(line(job))`` (by default
    :func:`progress_line`), at most ``rate`` times a second and only when the line changes.
    Ctrl-C calls ``on_interrupt``, cancels the job (and its ranks) and waits for it to stop.
    """
    getattr(job, "hold", lambda: False)()   # a job followed from here is held while it runs
    start = time.monotonic()
    last = ""
    next_draw = 0.0
    try:
        while not job.done:
            try:  # wakes at once when a thread job ends (its done event), else in 0.1 s
                job.wait(timeout=0.1)
            except TimeoutError:
                pass
            now = time.monotonic()
            if show is None or now - start < quiet_s or now < next_draw:
                continue
            text = line(job)
            if text != last:
                last, next_draw = text, now + 1.0 / rate
                show(text)
        job.wait()
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        job.cancel(grace=2.0)
        job.wait(timeout=15)
    return job

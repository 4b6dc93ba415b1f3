"""Following a job until it ends: one progress line, refreshed at a bounded rate, and Ctrl-C
cancels. The magics (``--wait``, ``%jobs wait``) and the CLI share it; each passes how a line
is shown (an updatable notebook display, or a carriage-return line on a terminal)."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["cancel_and_wait", "follow", "progress_line"]


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
           line: Callable[[object], str] = progress_line, wait_s: float = 15.0,
           same_s: float = 1.0, cancel: bool = True, terminate: bool = False):
    """Block until ``job`` ends; returns it.

    ``terminate=True`` (the terminal's commands): SIGTERM (``kill PID``, ``timeout``, a
    scheduler) is taken as Ctrl-C, so the job is cancelled and ends with its final event (a
    training writes its last checkpoint) instead of dying with the process unrecorded.

    ``cancel=False`` (waiting for a job started elsewhere: ``jobs wait ID``): Ctrl-C only
    stops the waiting, as Python's KeyboardInterrupt, and the job goes on.

    Silent for ``quiet_s`` seconds, then ``show(line(job))`` (by default
    :func:`progress_line`), at most ``rate`` times a second and only when the line changes.
    Ctrl-C calls ``on_interrupt``, cancels the job (and its ranks) and waits up to ``wait_s``
    seconds for it to stop (a training job writes its last checkpoint then).

    In the main thread SIGINT only records the interrupt while this runs, and the loop
    cancels: an interrupt arriving twice within ``same_s`` (``timeout -s INT`` signals the
    process, then its group) counts once wherever it lands. Raising KeyboardInterrupt at
    the signal, as Python does, let a second one land between catching the first and asking
    for the cancel: the job was never cancelled and its thread kept the process alive. A
    Ctrl-C later than ``same_s`` after the cancel stops the waiting (KeyboardInterrupt).
    """
    import signal
    import threading

    getattr(job, "hold", lambda: False)()   # a job followed from here is held while it runs
    interrupts: list[float] = []
    previous = previous_term = None
    if not cancel:
        _follow_loop(job, show, quiet_s, rate, None, line, interrupts, wait_s)
        return job
    if threading.current_thread() is threading.main_thread():
        def on_sigint(_signum, _frame):
            now = time.monotonic()
            interrupts.append(now)
            if now - interrupts[0] > same_s:  # a second Ctrl-C, not the same one again
                raise KeyboardInterrupt
        try:
            previous = signal.signal(signal.SIGINT, on_sigint)
            if terminate:
                previous_term = signal.signal(signal.SIGTERM, on_sigint)
        except ValueError:  # not the main interpreter's thread after all
            previous = None
    try:
        _follow_loop(job, show, quiet_s, rate, on_interrupt, line, interrupts, wait_s)
    except KeyboardInterrupt:
        if previous is not None:
            raise  # recorded by the handler: a second Ctrl-C while the job stops
        if on_interrupt is not None:  # not the main thread: Python's own KeyboardInterrupt
            on_interrupt()
        cancel_and_wait(job, wait_s=wait_s, same_s=same_s)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    return job


def _follow_loop(job, show, quiet_s, rate, on_interrupt, line, interrupts, wait_s):
    start = time.monotonic()
    last = ""
    next_draw = 0.0
    stop_by = None  # once cancelled: wait until then, then leave the job to stop on its own
    while not job.done:
        if interrupts and stop_by is None:
            if on_interrupt is not None:
                on_interrupt()
            job.cancel(grace=2.0)
            stop_by = time.monotonic() + wait_s
        if stop_by is not None and time.monotonic() > stop_by:
            return
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


def cancel_and_wait(job, *, wait_s: float = 15.0, same_s: float = 1.0) -> None:
    """Cancel ``job`` and wait up to ``wait_s`` seconds for it to stop (a training job
    writes its last checkpoint then). The same interrupt arriving again within ``same_s``
    seconds counts once (``timeout -s INT`` signals the process and then its whole group); a
    second Ctrl-C after that stops the waiting (KeyboardInterrupt), and a job still stopping
    after ``wait_s`` is left to stop on its own."""
    first = time.monotonic()
    asked = False
    while True:
        try:
            if not asked:
                job.cancel(grace=2.0)
                asked = True
            job.wait(timeout=max(0.1, wait_s - (time.monotonic() - first)))
            return
        except TimeoutError:
            return
        except KeyboardInterrupt:
            if time.monotonic() - first > same_s:
                raise

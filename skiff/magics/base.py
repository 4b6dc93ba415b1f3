"""What every magic shares: parse a line with a kind's grammar, launch, store, wait."""

from __future__ import annotations

import argparse
import sys
import time

from IPython.core.error import UsageError

from skiff.grammar import Command, GrammarError
from skiff.jobs import Job

__all__ = ["parse_line", "finish_launch", "wait_quietly", "usage_errors"]


def parse_line(cmd: Command, line: str) -> argparse.Namespace:
    """Parse a magic line; misuse raises UsageError (one line, no traceback)."""
    try:
        return cmd.parse(line, prog=f"%{cmd.name}")
    except GrammarError as exc:
        raise UsageError(str(exc)) from None


class usage_errors:
    """Context manager turning the user's mistakes (ValueError, KeyError, …) into UsageError."""

    def __init__(self, *types):
        self.types = types or (ValueError, KeyError, FileNotFoundError, TypeError)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, self.types):
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            raise UsageError(str(msg)) from None
        return False


def finish_launch(shell, job: Job, launch: dict) -> Job | None:
    """Store the job under ``-o NAME``, wait when ``--wait``, and hand it back for display."""
    if launch.get("output"):
        shell.user_ns[launch["output"]] = job
    if launch.get("wait"):
        wait_quietly(job)
    return job


def _progress_line(job: Job) -> str:
    state = job.state
    pct = f" {100 * state.done / float(state.total):5.1f}%" if state.total else ""
    metric = ""
    for name in () if state.message else ("loss", "residual", "value"):
        value = state.last(name)
        if isinstance(value, (int, float)):
            metric = f" {name} {value:.4g}"
            break
    return f"{job.id} {state.status}{pct}{metric} {state.message or ''}".rstrip()[:120]


def wait_quietly(job: Job, quiet_s: float = 2.0, stream=None, rate: float = 2.0) -> Job:
    """Block until the job ends: silent for ``quiet_s``, then one progress line, refreshed at
    most ``rate`` times a second and only when it changes (in a notebook an updatable
    display that is cleared at the end; in a terminal a carriage-return line).
    Ctrl-C cancels the job (and its ranks) and waits for it to stop."""
    from skiff.widgets.display import widgets_enabled

    stream = stream or sys.stdout
    in_kernel = stream is sys.stdout and widgets_enabled()
    start = time.monotonic()
    handle = None
    shown = last = ""
    next_draw = 0.0
    try:
        while not job.done:
            time.sleep(0.1)
            now = time.monotonic()
            if now - start < quiet_s or now < next_draw:
                continue
            line = _progress_line(job)
            if line == last:
                continue
            last, next_draw = line, now + 1.0 / rate
            if in_kernel:
                from IPython.display import display

                if handle is None:
                    handle = display({"text/plain": line}, raw=True, display_id=True)
                else:
                    handle.update({"text/plain": line}, raw=True)
            else:
                stream.write("\r" + line.ljust(len(shown)))
                stream.flush()
                shown = line
        job.wait()
    except KeyboardInterrupt:
        job.cancel(grace=2.0)
        job.wait(timeout=15)
    if handle is not None:
        handle.update({"text/plain": ""}, raw=True)
    if shown:
        stream.write("\n")
    return job

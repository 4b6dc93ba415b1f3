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


def wait_quietly(job: Job, quiet_s: float = 2.0, stream=None) -> Job:
    """Block until the job ends: silent for ``quiet_s``, then a one-line text progress.
    Ctrl-C cancels the job (and its ranks) and waits for it to stop."""
    stream = stream or sys.stdout
    start = time.monotonic()
    shown = False
    try:
        while not job.done:
            time.sleep(0.1)
            if time.monotonic() - start > quiet_s:
                state = job.state
                pct = f"{100 * state.done / float(state.total):5.1f}%" if state.total else ""
                stream.write(f"\r{job.id} {state.status} {pct} {state.message or ''}"[:120])
                stream.flush()
                shown = True
        job.wait()
    except KeyboardInterrupt:
        job.cancel(grace=2.0)
        job.wait(timeout=15)
    if shown:
        stream.write("\n")
    return job

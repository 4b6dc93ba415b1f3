"""What every magic shares: usage errors as one line, ``-o NAME``, ``--wait``."""

from __future__ import annotations

import argparse
import sys

from IPython.core.error import UsageError

from skiff.grammar import USER_ERRORS, Command, GrammarError, user_message
from skiff.grammar.common import asks_for_help
from skiff.jobs import Job, follow

__all__ = ["parse_line", "finish_launch", "wait_quietly", "usage_errors", "grammar_doc",
           "asks_json", "refusal"]


def parse_line(cmd: Command, line: str) -> argparse.Namespace | None:
    """Parse a magic line; misuse raises UsageError (one line, no traceback). ``-h`` or
    ``--help`` anywhere on the line prints the usage and returns None."""
    if asks_for_help(line):
        print(cmd.usage(prog=f"%{cmd.name}"))
        return None
    try:
        return cmd.parse(line, prog=f"%{cmd.name}")
    except GrammarError as exc:
        raise refusal(str(exc), cmd.name, line) from None


def asks_json(line: str) -> bool:
    """``--json`` is one of the line's words (a line shlex cannot split: split on spaces)."""
    import shlex

    try:
        words = shlex.split(line or "")
    except ValueError:
        words = (line or "").split()
    return "--json" in words


def refusal(message: str, command: str | None = None, line: str | None = None) -> UsageError:
    """The UsageError of a refused magic line; a ``--json`` line prints the terminal's
    document of a refusal first, ``{"error": LINE, "command": NAME, "exit": 2}`` on stdout
    (round 42: ``python -m skiff ... --json`` prints it, the magic printed nothing a cell's
    captured stdout could parse). The cell still fails, as the terminal's exit status does:
    Run All stops there."""
    first = message.splitlines()[0] if message else ""
    if command is not None and line is not None and asks_json(line):
        import json

        print(json.dumps({"error": first, "command": command, "exit": 2},
                         ensure_ascii=False), flush=True)
    return UsageError(message)


def grammar_doc(cmd: Command, notes: str = ""):
    """Decorator: the magic's ``__doc__`` (``%jobs?``) is its grammar's usage, the one
    ``%jobs --help`` prints, then ``notes``: a hand-written list of its options had fallen
    behind the grammar (``%jobs?`` never named --json)."""

    def wrap(fn):
        fn.__doc__ = cmd.usage(prog=f"%{cmd.name}") + (f"\n{notes.strip()}\n" if notes
                                                        else "")
        return fn

    return wrap


class usage_errors:
    """Context manager turning the user's mistakes (ValueError, KeyError, …) into UsageError."""

    def __init__(self, *types, command: str | None = None, line: str | None = None):
        self.types = types or USER_ERRORS
        self.command, self.line = command, line  # a --json line: its refusal's document

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, self.types):
            raise refusal(user_message(exc) or str(exc), self.command, self.line) from None
        return False


def finish_launch(shell, job: Job, launch: dict) -> Job | None:
    """Store the job under ``-o NAME``, wait when ``--wait``, and hand it back for display.
    A job ``NAME`` held that still runs goes on (a cell run again while its job ran started a
    second one beside it, the first out of reach and unnamed): a line says so and how to stop
    it, kept in a saved notebook."""
    name = launch.get("output")
    if name:
        held = shell.user_ns.get(name)
        state = held.refresh() if isinstance(held, Job) and held.id != job.id else None
        if state is not None and not state.final:
            print(f"{name} held job {held.id}, still {state.status}: it goes on beside "
                  f"{job.id} (%jobs cancel {held.id} stops it)")
        shell.user_ns[name] = job
    if launch.get("wait"):
        wait_quietly(job)
    return job


def wait_quietly(job: Job, quiet_s: float = 2.0, stream=None, rate: float = 2.0, *,
                 cancel: bool = True) -> Job:
    """Block until the job ends: silent for ``quiet_s``, then one progress line, refreshed at
    most ``rate`` times a second and only when it changes (in a notebook an updatable
    display, in a terminal a carriage-return line); a line once shown ends as the job's final
    line (``ID done 100.0% loss 0.12``): a saved notebook keeps what the wait ended on, read
    where its widgets are not (GitHub, nbviewer), and no empty output.
    Ctrl-C cancels the job (and its ranks) and waits for it to stop; with ``cancel=False``
    (``%jobs wait``) it only stops the waiting (KeyboardInterrupt)."""
    from skiff.widgets.display import widgets_enabled

    stream = stream or sys.stdout
    in_kernel = stream is sys.stdout and widgets_enabled()
    handle = None
    shown = last = ""

    def show(line: str) -> None:
        nonlocal handle, shown, last
        if line == last:  # the final line when it was the last one drawn
            return
        last = line
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

    interrupted: list[bool] = []
    try:
        follow(job, show, quiet_s=quiet_s, rate=rate, cancel=cancel,
               on_interrupt=lambda: interrupted.append(True))
    finally:
        if handle is not None or shown:
            from skiff.jobs.follow import progress_line

            show(progress_line(job))  # where it ended (or stood, when the wait stopped)
        if shown:
            stream.write("\n")
    if interrupted:  # the interrupt cancelled it: how to go on, kept in a saved notebook
        from skiff.jobs.going_on import resume_hint

        hint = resume_hint(job, front="magic")
        if hint:
            stream.write(hint + "\n")
            stream.flush()
    return job

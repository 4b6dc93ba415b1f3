"""What a thread job prints, kept in its run folder as a process job's rank keeps it.

A process job's ranks tee their stdout and stderr into ``logs/rank<r>.out`` (worker.py), so
``jobs logs ID``, ``%jobs logs ID`` and another notebook see what the job printed. A job on
a thread of the kernel (``%train`` on one device, a ``%%train`` cell's model that prints)
printed into whichever cell the kernel was running, and nowhere else: a user following it
from another notebook or a terminal never saw it (round 40). While a thread job runs, the
process's ``sys.stdout`` and ``sys.stderr`` are wrapped once by :class:`ThreadOutput`: every
write goes where it went before (the notebook's cell, the terminal), and one made on a job's
thread also goes to that job's ``logs/rank0.out``."""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path

__all__ = ["ThreadOutput", "kept_output"]

_FILES: dict[int, _Kept] = {}   # thread ident -> where the job it runs keeps its output
_LOCK = threading.Lock()


class _Kept:
    """A job's ``logs/rank0.out``, opened at the first write (a job that prints nothing
    leaves no file)."""

    def __init__(self, path: Path):
        self.path, self.fh, self.failed = path, None, False

    def write(self, text: str) -> None:
        if self.failed:
            return
        try:
            if self.fh is None:
                self.fh = open(self.path, "a", buffering=1, errors="replace")  # noqa: SIM115
            self.fh.write(text)
        except (OSError, ValueError, TypeError):  # its folder gone, a closed file
            self.failed = True

    def close(self) -> None:
        if self.fh is not None:
            with contextlib.suppress(OSError, ValueError):
                self.fh.close()


class ThreadOutput:
    """A text stream that writes to ``stream`` and, on a job's thread, to its file too.
    Everything else (``flush``, ``isatty``, ipykernel's ``set_parent``) is the stream's."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        kept = _FILES.get(threading.get_ident())
        if kept is not None:
            kept.write(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _wrap() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ThreadOutput):
            setattr(sys, name, ThreadOutput(stream))


@contextlib.contextmanager
def kept_output(run_dir: Path):
    """While this runs on a job's thread, what the thread prints also goes to the job's
    ``logs/rank0.out`` (line-buffered, made at the first line printed)."""
    ident = threading.get_ident()
    kept = _Kept(Path(run_dir) / "logs" / "rank0.out")
    with _LOCK:
        _wrap()
        _FILES[ident] = kept
    try:
        yield
    finally:
        with _LOCK:
            _FILES.pop(ident, None)
        kept.close()

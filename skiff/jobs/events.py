"""The append-only event log of a run: ``events.jsonl``, one JSON object a line.

Writers append whole lines under a lock and flush each one, so a reader never sees half an
event except the line being written right now; a reader keeps such a partial last line for its
next read. A writer that finds the file not ending in a newline (a line cut by a crash or a
truncation) terminates it first, so its own event is never glued onto the damaged line.
A line that is complete but not valid JSON is skipped with a warning and the rest is kept.
The schema is in ``docs/events.md``.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import warnings
from pathlib import Path

__all__ = ["EventWriter", "EventReader", "read_events", "EVENT_TYPES", "STATUSES", "FINAL"]

EVENT_TYPES = ("status", "progress", "metric", "log", "artifact", "result", "error", "info")
STATUSES = ("queued", "running", "done", "failed", "cancelled")
FINAL = ("done", "failed", "cancelled")
# called with the run folder after a final status is written (skiff.jobs.folded adds its
# checkpoint when it is imported: by skiff.jobs.job and skiff.jobs.reporter)
AFTER_FINAL: list = []


class CorruptEventWarning(UserWarning):
    """A line of events.jsonl that is not a JSON object was skipped."""


def _clean(value):
    """JSON cannot hold NaN or inf: write them as strings the reader turns back."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _clean(value.item())
    return value


class EventWriter:
    """Appends events to one file; safe across threads of one process."""

    def __init__(self, path: str | os.PathLike, *, rank: int = 0):
        self.path = Path(path)
        self.rank = rank
        self._lock = threading.Lock()

    def write(self, type: str, **fields) -> dict:
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type!r}: choose from {', '.join(EVENT_TYPES)}")
        event = {"t": round(time.time(), 6), "type": type, "rank": self.rank, **fields}
        line = json.dumps(_clean(event), separators=(",", ":"), default=str) + "\n"
        data = line.encode()
        with self._lock:
            fd = _open_append(self.path)
            try:
                if _ends_unterminated(fd):
                    data = b"\n" + data
                os.write(fd, data)
            except OSError as exc:  # a full disk, a folder made read-only: say which file
                if exc.filename is not None:
                    raise
                raise exc.__class__(exc.errno, exc.strerror, str(self.path)) from exc
            finally:
                os.close(fd)
        if type == "status" and fields.get("status") in FINAL:
            for hook in AFTER_FINAL:  # folded.py's checkpoint: a listing reads what follows
                try:
                    hook(self.path.parent)
                except Exception:  # noqa: BLE001 - the event is written; a hook saves time only
                    pass
        return event


def _open_append(path: Path) -> int:
    """The events file opened for appending; created with the run folders' file mode."""
    try:
        return os.open(path, os.O_RDWR | os.O_APPEND)
    except FileNotFoundError:
        from .store import file_mode

        mode = file_mode()
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, mode)
        try:
            os.fchmod(fd, mode)  # O_CREAT's mode is cut by the umask
        except OSError:
            pass
        return fd


def _ends_unterminated(fd: int) -> bool:
    """True when the file's last byte is not a newline (a partial line left by a crash)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _restore(value):
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return value


class EventReader:
    """Follows an events file: each :meth:`read` returns the events appended since the last."""

    def __init__(self, path: str | os.PathLike, *, metrics: bool = True):
        self.path = Path(path)
        self.offset = 0
        self.line_no = 0
        self.skipped = 0
        # metrics=False: metric lines (as the writer writes them) are passed over unread, for
        # a listing that shows none (a long training's events are mostly metrics)
        self.metrics = metrics

    def read(self) -> list[dict]:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except FileNotFoundError:
            return []
        if not chunk:
            return []
        end = chunk.rfind(b"\n")
        if end < 0:
            return []  # a partial line being written: wait for its newline
        self.offset += end + 1
        lines = chunk[: end + 1].splitlines()
        kept = lines if self.metrics else [raw for raw in lines if _METRIC not in raw]
        events = _decode_all(kept)
        if events is not None:  # every line an event: decoded in one call (a listing folds
            self.line_no += len(lines)  # a long training's 100,000 lines: 2x faster)
            return events
        events = []
        for raw in lines:
            self.line_no += 1
            if not self.metrics and _METRIC in raw:
                continue
            if not raw.strip():
                continue
            try:
                event = json.loads(raw)
                if not isinstance(event, dict) or "type" not in event:
                    raise ValueError("not an event object")
            except ValueError as exc:
                self.skipped += 1
                warnings.warn(
                    f"{self.path}: skipped corrupt line {self.line_no} ({exc}): "
                    f"{raw[:80]!r}",
                    CorruptEventWarning,
                    stacklevel=2,
                )
                continue
            if event.get("type") == "metric":
                event["value"] = _restore(event.get("value"))
            events.append(event)
        return events


_METRIC = b'"type":"metric"'  # how EventWriter writes a metric's type


def _decode_all(lines: list[bytes]) -> list[dict] | None:
    """The events of ``lines`` decoded as one JSON array, or None when any line is not one
    event object (blank, corrupt, two values glued): then they are read line by line, and
    each bad one skipped with its warning."""
    if not lines or not all(raw.startswith(b"{") for raw in lines):
        return None
    try:
        events = json.loads(b"[" + b",".join(lines) + b"]")
    except ValueError:
        return None
    if len(events) != len(lines) or not all(isinstance(e, dict) and "type" in e
                                            for e in events):
        return None
    for event in events:
        if event.get("type") == "metric":
            event["value"] = _restore(event.get("value"))
    return events


def read_events(path: str | os.PathLike) -> list[dict]:
    """Every complete, valid event in a file."""
    return EventReader(path).read()

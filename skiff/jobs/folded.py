"""``folded.json``: a run's events folded without their metrics, kept beside them, so that a
listing reads the few bytes appended since instead of the whole log (a 20,000-step
training's events are 10 MB, nearly all metric lines).

The writer of a final status (:class:`skiff.jobs.events.EventWriter`) folds the events
(from the checkpoint already there, when it still holds) and replaces ``folded.json`` with
the state, the number of bytes it folded and the last bytes of them. A reader
(:func:`resume_fold`) takes it only when the log still starts with those bytes, and folds
what came after (a late status, a cancel) as usual: what it shows is what a fold of the
whole log shows. A checkpoint that is missing, damaged or of another log is ignored (the
whole log is read, as before). The reader writes nothing."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import fields
from pathlib import Path

from .events import AFTER_FINAL, EventReader, _restore
from .state import JobState, _Window

__all__ = ["FOLDED", "write_fold", "resume_fold"]

FOLDED = "folded.json"
VERSION = 1
_TAIL = 64  # bytes of the log kept to tell that the log is still the one folded
# a metric line's name as EventWriter writes it (keys in its order): the names, in the order
# they first came, without decoding the lines
_METRIC_NAME = re.compile(rb'"type":"metric","rank":-?\d+,"name":("(?:[^"\\]|\\.)*")')

# fields held as tuples (JSON has lists only)
_TUPLES = ("_point", "_anchor", "own", "_wpoint", "_from", "_seg", "_unit_work", "_bstart", "_bend")
_TUPLE_LISTS = ("progress_times", "logs")


def _encode(state: JobState) -> dict:
    out = {}
    for f in fields(state):
        value = getattr(state, f.name)
        out[f.name] = value.sums if isinstance(value, _Window) else value
    out["metrics"] = {}
    return out


def _decode(doc: dict) -> JobState:
    state = JobState()
    names = {f.name for f in fields(state)}
    if set(doc) != names:
        raise ValueError("not the fields of this skiff's JobState")
    for name, value in doc.items():
        if name in ("_timed", "_stepped", "_worked", "_fit"):
            window = getattr(state, name)
            if not isinstance(value, list) or len(value) != len(window.sums):
                raise ValueError(f"{name}: {value!r}")
            window.sums = [float(v) for v in value]
            continue
        if name in _TUPLES and value is not None:
            value = tuple(value)
        elif name in _TUPLE_LISTS:
            value = [tuple(item) for item in value]
        setattr(state, name, value)
    if state.metrics:
        raise ValueError("a fold with metrics")
    return state


def _tail(path: Path, end: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(max(0, end - _TAIL))
        return fh.read(min(end, _TAIL))


def _point(data: bytes, at: int, name: str):
    """The (step, value, t) the fold makes of the metric line around ``data[at]``, or None
    (not a metric of ``name`` with a number)."""
    if at < 0:
        return None
    start, stop = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
    try:
        event = json.loads(data[start:stop if stop >= 0 else len(data)])
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("type") != "metric" or event.get("name") != name:
        return None
    event["value"] = _restore(event.get("value"))
    state = JobState()
    state.apply(event)
    series = state.metrics.get(name)
    return list(series[-1]) if series else None


def _last_points(path: Path, end: int) -> list | None:
    """``[name, step, value, t]`` of each metric's last point in the first ``end`` bytes, in
    the order the fold meets the names; None where that cannot be told without decoding
    every line (a metric line written otherwise, a name whose first value is no number)."""
    with open(path, "rb") as fh:
        data = fh.read(end)
    found = _METRIC_NAME.findall(data)
    if len(found) != data.count(b'"type":"metric"'):
        return None
    points = []
    for raw in dict.fromkeys(found):
        name = json.loads(raw)
        key = b',"name":' + raw + b',"value":'
        if _point(data, data.find(key), name) is None:
            return None
        at = len(data)
        while (point := _point(data, at := data.rfind(key, 0, at), name)) is None:
            if at < 0:
                return None
        points.append([name, *point])
    return points


def resume_fold(run_dir: str | os.PathLike) -> tuple[JobState, int, int] | None:
    """(state, bytes, lines) of the run's checkpoint when the events log still starts with
    the bytes it folded; None otherwise (no checkpoint, damaged, the log cut or rewritten).
    The state's metrics hold each metric's last point where the checkpoint knows them."""
    run_dir = Path(run_dir)
    try:
        doc = json.loads((run_dir / FOLDED).read_text())
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            return None
        end, lines = doc["bytes"], doc["lines"]
        if type(end) is not int or type(lines) is not int or end <= 0 or lines <= 0:
            return None
        events = run_dir / "events.jsonl"
        if events.stat().st_size < end or _tail(events, end) != bytes.fromhex(doc["tail"]):
            return None
        state = _decode(doc["state"])
        last = doc.get("last")
        if last is not None:
            state.metrics = {name: [(step, value, t)] for name, step, value, t in last}
            if not all(type(n) is str and (type(s) is int or s is None) and type(v) is float
                       and (type(t) is float or t is None) for n, s, v, t in last):
                return None
        return state, end, lines
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def light_reader(path: Path, run_dir: Path) -> tuple[EventReader, JobState, bool]:
    """A reader of ``path`` without metrics, the state it has folded and whether that
    state holds each metric's last point: from the checkpoint where it holds (the reader
    then reads only what came after, metrics too where the last points are known), else
    empty (and no metric)."""
    found = resume_fold(run_dir)
    if found is None:
        return EventReader(path, metrics=False), JobState(), False
    state, offset, lines = found
    reader = EventReader(path, metrics=bool(state.metrics))
    reader.offset, reader.line_no = offset, lines
    return reader, state, bool(state.metrics)


def write_fold(run_dir: str | os.PathLike) -> None:
    """Fold the events of ``run_dir`` without metrics (from its checkpoint where it holds)
    and replace the checkpoint; quiet when it cannot be written (a read-only or removed
    folder, a full disk): it only saves a later listing time."""
    run_dir = Path(run_dir)
    path = run_dir / "events.jsonl"
    import warnings

    from .events import CorruptEventWarning
    from .store import file_mode

    reader, state, _last = light_reader(path, run_dir)
    state.metrics = {}  # the last points are made again from the whole log below
    reader.metrics = False
    with warnings.catch_warnings():  # a damaged line is said by the reader that shows it
        warnings.simplefilter("ignore", CorruptEventWarning)
        for event in reader.read():
            state.apply(event)
    if reader.offset <= 0:
        return
    tmp = None
    try:
        doc = {"version": VERSION, "bytes": reader.offset, "lines": reader.line_no,
               "tail": _tail(path, reader.offset).hex(), "state": _encode(state),
               "last": _last_points(path, reader.offset)}
        text = json.dumps(doc, separators=(",", ":"))  # a value JSON cannot hold: not kept
        again = _encode(_decode(json.loads(text)["state"]))
        if json.dumps(again, separators=(",", ":")) != json.dumps(doc["state"],
                                                                  separators=(",", ":")):
            return  # what would not read back the same is not kept: read in full
        # a new file of its own (O_EXCL: never through a link someone left at its name)
        fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=f".{FOLDED}.", suffix=".tmp")
        try:
            os.fchmod(fd, file_mode())
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        os.replace(tmp, run_dir / FOLDED)
    except (OSError, ValueError, TypeError):
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


AFTER_FINAL.append(write_fold)

"""What the Jobs sidebar's REST API sends: jobs as plain JSON, read from their run folders.

Everything here reads; nothing runs code named in a folder. A job is folded from its events
by the cached :class:`~skiff.jobs.Job` of :class:`JobCache` (each poll reads only the bytes
appended since the last), and sent in two sizes:

- :func:`job_row`: one row of the list (id, name, kind, status, progress fraction and label,
  times, command, ranks, error's first line, a row per MPI rank; a damaged folder with
  why);
- :func:`job_detail`: the live view of one job (the row, the last value and a thinned series
  of every metric, the log's tail, the error with its traceback, the result summary, the
  image artifacts' names, the terminal's summary once it has ended, and for a job on MPI
  ranks one row per rank: how it is or ended, its share of the work, its last line);

and :func:`events_since` hands out the raw event lines after a byte offset of
``events.jsonl``, for a client that follows the log itself.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from pathlib import Path

from skiff.jobs import DamagedJob, Job, list_run_dirs, runs_root
from skiff.jobs.job import load_or_damaged
from skiff.jobs.store import is_run_dir
from skiff.jobs.terminal import KEY_METRICS, clean, fmt_clock, fmt_rate, shown_eta
from skiff.kinds.base import figure

__all__ = ["JobCache", "job_row", "job_detail", "events_since", "progress_label",
           "thin", "rank_rows", "image_file", "UnknownJob", "MAX_POINTS", "LOG_LINES",
           "EVENTS_CHUNK", "IMAGE_TYPES"]

MAX_POINTS = 400        # points of a metric series in a detail (a longer one is thinned)
LOG_LINES = 30          # log lines in a detail
EVENTS_CHUNK = 1 << 20  # bytes of events.jsonl per events_since answer
RESULT_BYTES = 16 << 10  # a result.json larger than this is left out of a detail
IMAGE_BYTES = 32 << 20  # an image artifact larger than this is not sent
# the image types a job's tab shows (never SVG: a script in it would run on the server's origin)
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp"}
# a job id as skiff makes them (store.new_job_id), or any plain folder name: never a path
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")


class UnknownJob(KeyError):
    """No run folder of that id under the runs root (the message says which root)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown job"


def _finite(value):
    """A number JSON can carry (NaN and infinities become their names, as in events.jsonl)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def _plural(unit: str) -> str:
    return unit if not unit or unit.endswith("s") else f"{unit}s"


def progress_label(state, now: float | None = None) -> str:
    """``42% · 420/1000 steps · 12 steps/s · ETA 00:05 · loss 0.31`` (what is known)."""
    now = time.time() if now is None else now
    bits = []
    if state.fraction is not None:
        bits.append(f"{100 * state.fraction:.0f}%")
    if state.total:
        bits.append(f"{figure(state.done)}/{figure(float(state.total))} "
                    f"{_plural(state.unit)}".rstrip())
    elif state.done:
        bits.append(f"{figure(state.done)} {_plural(state.unit)}".rstrip())
    stalled = state.stalled(now)
    finishing = state.finishing()
    if stalled is not None:
        bits.append(f"no progress for {fmt_clock(stalled)}")
    elif finishing is not None:  # past its last step, working (an ocr-rec's final reading)
        bits.append(f"finishing: {finishing}" if finishing else "finishing")
    elif not state.final:
        rate = fmt_rate(state.rate(), state.unit)
        if rate:
            bits.append(rate)
        eta = shown_eta(state, now)  # none from the first units (round 31); counted down (46)
        if eta is not None:
            bits.append(f"ETA {fmt_clock(eta)}")
    for name in KEY_METRICS:
        value = state.last(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            bits.append(f"{name} {figure(value)}")
            break
    else:
        if state.message and not state.final:
            bits.append(str(state.message))
    return clean(" · ".join(bits))[:160]


def job_row(job, now: float | None = None) -> dict:
    """One job of the list, as JSON (every text escaped of control characters; the browser
    sets it as text, never as HTML)."""
    now = time.time() if now is None else now
    if isinstance(job, DamagedJob):
        return {"id": job.id, "name": None, "kind": "?", "status": "damaged",
                "fraction": None, "progress": "", "created": None, "started": None,
                "ended": None, "elapsed": None, "command": None, "np": None,
                "runner": None, "device": None, "error": clean(job.error),
                "damaged": clean(job.reason), "trust": None, "final": True, "inferred": None,
                "ranks": []}
    state = job.refresh()
    meta = job.meta
    np_ = meta.get("np", 1)
    command = meta.get("command") or meta.get("label")
    error = state.error.splitlines()[0] if state.error else None
    return {
        "id": job.id,
        "name": clean(meta["name"]) if isinstance(meta.get("name"), str) else None,
        "kind": clean(job.kind),
        "status": state.status,
        "final": state.final,
        "fraction": None if state.fraction is None else round(state.fraction, 4),
        "progress": progress_label(state, now),
        "created": meta.get("created"),
        "started": state.started,
        "ended": state.ended,
        "elapsed": None if state.started is None else round(state.elapsed(now) or 0.0, 3),
        "command": clean(command) if isinstance(command, str) else None,
        "np": np_ if isinstance(np_, int) else 1,
        "runner": meta.get("runner"),
        "device": clean(meta["device"]) if isinstance(meta.get("device"), str) else None,
        "error": clean(error) if error else None,
        "inferred": clean(state.inferred) if state.inferred else None,
        "damaged": None,
        "trust": _trust(job),
        # a job on MPI ranks: one row each (a few small files per rank; a thread job: none)
        "ranks": rank_rows(job, state) if np_ != 1 else [],
    }


def _trust(job) -> str | None:
    """``trusted``, ``unsigned`` or ``altered``; None when the signing key cannot be read
    (a listing shows the job all the same)."""
    try:
        return job.trust
    except Exception:  # noqa: BLE001 - an unreadable key must not hide every job
        return None


def thin(series: list, limit: int = MAX_POINTS) -> list:
    """At most ``limit`` points of a series, evenly spread, the first and last kept."""
    n = len(series)
    if n <= limit:
        return list(series)
    step = (n - 1) / (limit - 1)
    return [series[round(i * step)] for i in range(limit)]


def job_detail(job, now: float | None = None) -> dict:
    """The live view of one job: its row, metrics (last value and a thinned series of
    ``[step, value]``), the log's tail, error and traceback, result.json, image artifacts."""
    row = job_row(job, now)
    if isinstance(job, DamagedJob):
        return {"job": row, "metrics": {}, "log": [], "traceback": None, "result": None,
                "summary": None, "images": [], "info": {}, "run_dir": str(job.run_dir),
                "ranks": []}
    job.read_metrics()  # a listed snapshot: its whole series now
    state = job.refresh()
    metrics = {}
    for name, series in state.metrics.items():
        points = [[i if step is None else step, _finite(value)]
                  for i, (step, value, _t) in enumerate(series)]
        metrics[clean(name)] = {"last": _finite(series[-1][1]), "count": len(series),
                                "points": thin(points)}
    log = [{"t": t, "level": clean(level), "message": clean(message, keep_newlines=True)}
           for t, level, message in state.logs[-LOG_LINES:]]
    images = [clean(a.get("name", "")) for a in state.artifacts if a.get("kind") == "image"]
    return {
        "job": row,
        "unit": clean(state.unit),
        "message": clean(state.message) if state.message else None,
        "metrics": metrics,
        "log": log,
        "error": clean(state.error, keep_newlines=True) if state.error else None,
        "traceback": clean(state.traceback, keep_newlines=True) if state.traceback else None,
        "summary": _summary(job) if state.final else None,
        "result": _small(job.result) if state.final else None,
        "run_dir": str(job.run_dir),
        "images": list(dict.fromkeys(images)),
        "info": _json_or_none(state.info) or {},
        "events": state.n_events,
        "ranks": row["ranks"],  # as in its row
    }


def rank_rows(job, state=None) -> list[dict]:
    """One row per MPI rank of a process job (``jobs show`` prints the same,
    :func:`skiff.jobs.render.job_ranks`), [] for a thread job or a single process: ``rank``,
    ``status`` (starting, running, exited, failed, left, died), ``pid``, ``host``, ``code``,
    ``detail`` (why it ended so), ``line`` (the last it wrote) and, where the ranks share the
    work (``RunReporter.split_progress``), its part: ``done``, ``total``, ``fraction``."""
    from skiff.jobs.render import job_ranks
    from skiff.jobs.split import read_rank_progress

    state = job.refresh() if state is None else state
    rows = []
    for r in job_ranks(job, lines=1):
        part = (state.own if r.rank == 0 else read_rank_progress(job.run_dir, r.rank)) \
            if state.split else None
        done, total = part if part is not None else (None, None)
        fraction = None
        if isinstance(done, (int, float)) and isinstance(total, (int, float)) and total > 0:
            fraction = round(min(1.0, max(0.0, float(done) / float(total))), 4)
        rows.append({"rank": r.rank, "status": r.status, "pid": r.pid,
                     "host": clean(r.host) if r.host else None, "code": r.code,
                     "detail": clean(r.detail) if r.detail else None,
                     "line": clean(r.lines[-1]) if r.lines else None,
                     "done": _finite(done) if done is not None else None,
                     "total": _finite(total) if total is not None else None,
                     "fraction": fraction})
    return rows


def image_file(job, name: str) -> tuple[Path, str]:
    """The file of ``job``'s newest image artifact called ``name`` (a name its detail lists)
    and its content type. :class:`UnknownJob` (404) for no such image or one gone from the
    folder; ValueError (409) for a type the tab does not show (SVG), a file outside the run
    folder (a link) or one too large."""
    if isinstance(job, DamagedJob):
        raise ValueError(f"job {job.id} is damaged ({job.reason}): no images")
    state = job.refresh()
    found = [a for a in state.artifacts if a.get("kind") == "image"
             and clean(a.get("name", "")) == name]
    if not found:
        raise UnknownJob(f"job {job.id} has no image {name!r}")
    path = job.run_dir / str(found[-1]["path"])
    kind = IMAGE_TYPES.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"image {name!r} of job {job.id} is a {path.suffix or 'file'} file, "
                         f"which the tab does not show (png, jpeg, gif, webp)")
    try:
        real, home = path.resolve(strict=True), job.run_dir.resolve()
    except OSError:
        raise UnknownJob(f"image {name!r} of job {job.id} is gone from its run folder") \
            from None
    if home not in real.parents or not real.is_file():
        raise ValueError(f"image {name!r} of job {job.id} is not a file of its run folder")
    if real.stat().st_size > IMAGE_BYTES:
        raise ValueError(f"image {name!r} of job {job.id} is larger than "
                         f"{IMAGE_BYTES >> 20} MiB")
    return real, kind


def _summary(job) -> str | None:
    """What the terminal prints when a job ends: status and time, the error or the kind's
    key figures (``Kind.summary``), the run folder; None when the kind cannot say."""
    from skiff.jobs.terminal import summary
    from skiff.kinds import KINDS

    try:
        return summary(job, KINDS.get(job.kind))
    except Exception:  # noqa: BLE001 - a damaged result.json gives no summary, not an error
        return None


def _small(value, limit: int = RESULT_BYTES):
    """``value`` (result.json) when its JSON is at most ``limit`` bytes, else None."""
    value = _json_or_none(value)
    if value is None or len(json.dumps(value)) > limit:
        return None
    return value


def _json_or_none(value):
    """``value`` if JSON can carry it as it is (what a folder holds is JSON already)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return value


def events_since(run_dir: Path, offset: int, limit: int = EVENTS_CHUNK) -> dict:
    """The complete event lines of ``events.jsonl`` after byte ``offset`` (at most ``limit``
    bytes of them), parsed; ``offset`` of the answer is where the next request starts. A
    line that is not a JSON object is skipped, as the folding reader does."""
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset!r}")
    path = Path(run_dir) / "events.jsonl"
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(min(offset, size))
            chunk = fh.read(limit)
    except FileNotFoundError:
        return {"events": [], "offset": 0, "size": 0, "skipped": 0}
    if offset > size:  # the file was replaced by a shorter one: start again
        return {"events": [], "offset": 0, "size": size, "skipped": 0, "reset": True}
    end = chunk.rfind(b"\n")
    if end < 0 and len(chunk) >= limit:  # one line longer than a whole chunk: step over it
        return {"events": [], "offset": offset + len(chunk), "size": size, "skipped": 1}
    events, skipped = [], 0
    for raw in chunk[: end + 1].splitlines():
        if not raw.strip():
            continue
        try:  # NaN and Infinity literals (not JSON, but Python writes them) stay text
            event = json.loads(raw, parse_constant=str)
        except ValueError:
            skipped += 1
            continue
        if isinstance(event, dict) and "type" in event:
            events.append(event)
        else:
            skipped += 1
    return {"events": events, "offset": offset + end + 1, "size": size, "skipped": skipped}


class JobCache:
    """The jobs of one runs root, each read once and then followed: a :class:`Job` keeps its
    reader's offset, so a poll reads only what was appended; a finished job is not read again.
    Folders that went away are dropped; a damaged folder is looked at again at each poll
    (its config.json may be fixed, or finished being written)."""

    def __init__(self, root: str | Path | None = None):
        self.root = runs_root(root)
        self._jobs: dict[Path, Job] = {}
        self._lock = threading.Lock()

    def _get(self, run_dir: Path):
        job = self._jobs.get(run_dir)
        if job is None:
            # a finished job as a snapshot: its fold and each metric's last point from its
            # folded.json (the first list of 50 long trainings read every metric line of
            # each: 30 s), its series read once its view asks (job_detail). A running one,
            # or one without the checkpoint (an older skiff's), is read whole as before.
            job = load_or_damaged(run_dir, self.root, metrics=False)
            if isinstance(job, Job) and not (job.refresh().final and job.last_points):
                job = load_or_damaged(run_dir, self.root)
            if isinstance(job, Job):
                self._jobs[run_dir] = job
        return job

    def jobs(self) -> list:
        """Every job under the root, oldest first (damaged folders as :class:`DamagedJob`)."""
        with self._lock:
            dirs = list_run_dirs(self.root)
            for gone in set(self._jobs) - set(dirs):
                del self._jobs[gone]
            return [self._get(d) for d in dirs]

    def find(self, job_id: str):
        """The job whose run folder is ``<root>/<job_id>`` (an exact folder name, never a
        path, a prefix or a job's name: what a request names is what it gets)."""
        if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
            raise UnknownJob(f"no job {job_id!r}: not a job id")
        run_dir = self.root / job_id
        if not is_run_dir(run_dir):
            raise UnknownJob(f"no job {job_id!r} under {self.root}")
        with self._lock:
            return self._get(run_dir)

    def forget(self, job_id: str) -> None:
        with self._lock:
            self._jobs.pop(self.root / job_id, None)

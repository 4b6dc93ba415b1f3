"""``RunReporter``: the kernels' reporting protocol (:mod:`skiff.kernels.backend.report`)
written into a run folder's events, logs and artifacts."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from skiff.kernels.backend.report import JobCancelled, NullReporter, Reporter

from . import folded  # noqa: F401 (its checkpoint after a final status: folded.json)
from .events import EventWriter

__all__ = ["Reporter", "NullReporter", "RunReporter", "JobCancelled"]


def _chmod(target) -> None:
    """The run folders' file mode (:func:`skiff.jobs.store.file_mode`) for a new file."""
    from .store import file_mode

    try:
        if isinstance(target, int):
            os.fchmod(target, file_mode())
        else:
            os.chmod(target, file_mode())
    except OSError:
        pass


class RunReporter(Reporter):
    """Writes events to a run folder. Only rank 0 writes events; every rank can stop.

    Progress events are throttled to ``max_rate`` per second (the latest one is kept and
    written at the next chance or at :meth:`flush`), so a tight loop can call it freely;
    so are the :meth:`sample` metrics of each name (every :meth:`metric` is written).
    """

    KEEP_FIRST = 100  # the first samples of each name are all written (a short job whole)
    SPIKE_WINDOW = 3  # past them, a window of 3 / max_rate s: its lowest, highest, closing

    def __init__(self, run_dir: str | os.PathLike, *, rank: int = 0, world_size: int = 1,
                 cancel_event: threading.Event | None = None, max_rate: float = 10.0):
        self.run_dir = Path(run_dir)
        self.rank = rank
        self.world_size = world_size
        self._writer = EventWriter(self.run_dir / "events.jsonl", rank=rank)
        self._cancel_event = cancel_event
        self._cancel_file = self.run_dir / "cancel"
        self._min_gap = 1.0 / max_rate
        self._last_progress = 0.0
        self._pending: dict | None = None
        self._sampled: dict[str, float] = {}  # name -> when its last sample was written
        self._samples: dict[str, dict] = {}  # name -> the latest sample held back
        self._sample_counts: dict[str, int] = {}  # name -> samples given so far
        self._last_stop_check = 0.0
        self._stopped = False
        self._log_path = self.run_dir / "logs" / f"rank{rank}.log"
        self._log_path.parent.mkdir(parents=True, exist_ok=True)

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def emit(self, type: str, **fields) -> None:
        if self.is_root:
            self._writer.write(type, **fields)

    def split_progress(self) -> None:
        """Say that the ranks share the work (OCR's ``--np N`` reads images r, r + N, ...):
        each rank's :meth:`progress` then counts its own part, and the job's progress, its
        summary and its view count the whole job (rank 0's part and the others', see
        :func:`skiff.jobs.split.whole_progress`). Called once, on every rank."""
        self._split = True
        self.emit("info", progress_split=True)

    _split = False  # split_progress was called: the other ranks' progress is written too

    def _progress_out(self, fields: dict) -> None:
        """Rank 0's progress is an event; another rank's, its latest in ``ranks/R.progress``
        when the kernel said the ranks share the work (else nobody reads it)."""
        if self.is_root:
            self.emit("progress", **fields)
            return
        if not self._split:
            return
        from .split import write_rank_progress

        write_rank_progress(self.run_dir, self.rank, fields)

    def progress(self, done, total=None, *, unit="step", message=None, work=None,
                 work_total=None, ready=None):
        """``done`` of ``total`` units; ``work`` of ``work_total`` (optional, any measure of
        what the units take: an OCR job's pixels) weights the ETA where units differ in size
        (three small images, then large pages); ``ready``: units already read and not yet
        given out (the rest of a batch whose results come out one by one; round 45)."""
        fields = {"done": done, "total": total, "unit": unit}
        if message:
            fields["message"] = message
        if ready is not None:
            fields["ready"] = int(ready)
        if work is not None and work_total is not None:
            fields["work"], fields["work_total"] = float(work), float(work_total)
        now = time.monotonic()
        finished = total is not None and done >= total
        if finished:  # the last step's samples are shown with it
            self._write_samples()
        if finished or now - self._last_progress >= self._min_gap:
            self._last_progress = now
            self._pending = None
            self._progress_out(fields)
        else:
            self._pending = fields

    def flush(self) -> None:
        self._write_samples()
        self._flush_progress()

    def _write_samples(self) -> None:
        held, self._samples = self._samples, {}
        now = time.monotonic()
        for name, window in held.items():
            # a window of at least a tenth of a second keeps its extremes (its lowest and
            # highest); a shorter one (a short job's end) its latest alone, as before
            whole = now - self._sampled.get(name, -1e9) >= self._min_gap
            self._sampled[name] = now
            for fields in _window_points(window, extremes=whole):
                self.emit("metric", name=name, **fields)

    def _flush_progress(self) -> None:
        if self._pending is not None:
            self._progress_out(self._pending)
            self._pending = None

    def metric(self, name, value, *, step=None):
        # a progress held back goes first once it is due: flushed at every metric, it was
        # written every step (a training's 20,000 steps: 20,000 progress events, not ~300)
        if self._pending is not None and time.monotonic() - self._last_progress >= self._min_gap:
            self._last_progress = time.monotonic()
            self._flush_progress()
        self.emit("metric", name=name, value=float(value), step=step)

    def sample(self, name, value, *, step=None):
        # at most max_rate a second per name (the first at once), the latest held back and
        # written when the next is due or at flush: a training's lr, throughput, memory and
        # gradient norm were four of its five metric lines a step (result.json keeps them all)
        # (round 44: the first KEEP_FIRST of each name are all written: a 20-step training's
        # lr was 2 points, its warm-up's peak at step 2 not drawn by a live chart)
        # (round 45: past them, a window of SPIKE_WINDOW / max_rate seconds keeps its lowest
        # and highest value, written with the sample that closes it: a spike of the gradient
        # norm or a dip of the throughput between two samples was missing from a long run's
        # live chart. Three points a window: as many points a second as before)
        now = time.monotonic()
        fields = {"value": float(value), "step": step}
        count = self._sample_counts[name] = self._sample_counts.get(name, 0) + 1
        gap = self._min_gap * (self.SPIKE_WINDOW if count > self.KEEP_FIRST else 1)
        if count <= self.KEEP_FIRST or now - self._sampled.get(name, -1e9) >= gap:
            window = self._samples.pop(name, None)
            for held in _window_points(window, extremes=True, last=False):
                self.emit("metric", name=name, **held)
            self._sampled[name] = now
            self.emit("metric", name=name, **fields)
        else:
            _hold(self._samples, name, count, fields)

    def log(self, message, *, level="info"):
        stamp = time.strftime("%H:%M:%S")
        with open(self._log_path, "a") as fh:
            if fh.tell() == 0:
                _chmod(fh.fileno())
            fh.write(f"{stamp} [{level}] {message}\n")
        self.emit("log", level=level, message=str(message))

    def info(self, **fields):
        self.emit("info", **fields)

    def artifact(self, name, path, *, kind="file"):
        src = Path(path)
        dest_dir = self.run_dir / "artifacts"
        dest_dir.mkdir(exist_ok=True)
        if src.resolve().is_relative_to(self.run_dir.resolve()):
            dest = src
        else:
            dest = dest_dir / src.name
            shutil.copyfile(src, dest)
            _chmod(dest)
        rel = os.path.relpath(dest, self.run_dir)
        self.emit("artifact", name=name, path=rel, kind=kind)
        return dest

    @property
    def stop_seen(self) -> bool:
        """True once :meth:`should_stop` has answered True: a kind that returns after that
        returned on the stop (its value is what it did until then)."""
        return self._stopped

    def should_stop(self):
        if self._stopped:
            return True
        if self._cancel_event is not None and self._cancel_event.is_set():
            self._stopped = True
            return True
        now = time.monotonic()
        if now - self._last_stop_check > 0.1:
            self._last_stop_check = now
            self._stopped = self._cancel_file.exists()
        return self._stopped


def _hold(samples: dict, name: str, count: int, fields: dict) -> None:
    """Keep ``fields`` in ``name``'s window: its lowest, highest (a NaN counts as highest:
    a divergence is the spike to show) and latest value, each with the order it came in."""
    window = samples.setdefault(name, {})
    value = fields["value"]
    point = (count, fields)
    low, high = window.get("low"), window.get("high")
    if low is None or value < low[1]["value"] or (low[1]["value"] != low[1]["value"]
                                                  and value == value):
        window["low"] = point
    if high is None or value > high[1]["value"] or (value != value
                                                  and high[1]["value"] == high[1]["value"]):
        window["high"] = point
    window["last"] = point


def _window_points(window: dict | None, *, extremes: bool = True,
                   last: bool = True) -> list[dict]:
    """A held window's points to write, in the order given, each once: its lowest and
    highest (``extremes``) and its latest (``last``; not when the sample that closes the
    window follows it: the latest held lies between it and the window's extremes)."""
    if not window:
        return []
    keys = (("low", "high") if extremes else ()) + (("last",) if last else ())
    points = {window[k][0]: window[k][1] for k in keys if k in window}
    return [points[i] for i in sorted(points)]


LATE_CANCEL = ("a cancel came after it had finished (it was never told to stop): its result "
               "is whole, so the job is done")


def returned_status(reporter: RunReporter, seen: bool) -> str:
    """The final status of a kind that returned its value; ``seen``: whether it had been
    told to stop (:attr:`RunReporter.stop_seen`, read as it returned). Told, it returned
    what it did until the stop (a training at its last checkpoint): "cancelled". Not told,
    its work is whole whenever the cancel came (a solve that converged as the user asked
    for the stop: it said "cancelled", offered a resume with nothing left to do, and
    tests skipped its whole result): "done", and its log says the cancel came late, as a
    finished process ignores a late kill and a finished future a late ``cancel()``."""
    if seen:
        return "cancelled"
    if reporter.should_stop():
        reporter.log(LATE_CANCEL)
    return "done"

"""The state of a job, folded from its event log."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .events import FINAL, STATUSES
from .series import Series

__all__ = ["JobState", "shown_eta"]

LOG_TAIL = 200
# the recent past the rates are measured over (weight exp(-age / tau)): a fifth of the time
# the job has been making progress, between half a second and ten seconds
RATE_WINDOW = (0.2, 0.5, 10.0)
# an ETA more than this many times the time the job has taken so far (and over an hour) is
# no estimate: shown as unknown
ETA_RATIO = 1000
# a running job has gone quiet (its rate and ETA are not shown: they are those of before)
# after this many seconds with no progress event, and this many times its usual gap between
# two (a training whose steps take a minute is not stalled between them)
STALL_MIN_S, STALL_RATIO = 10.0, 5.0


def _tau(elapsed: float) -> float:
    share, low, high = RATE_WINDOW
    return min(high, max(low, share * elapsed))


class _Window:
    """Sums of amounts over an exponentially fading window in time: each ``add(dt, tau,
    ...)`` first fades what is there by ``exp(-dt / tau)``. Ratios of the sums are rates
    over roughly the last ``tau`` seconds, so a slow start (a first step that compiles
    kernels, a residual that rises before it falls) is forgotten as newer steps come."""

    __slots__ = ("sums",)

    def __init__(self, n: int):
        self.sums = [0.0] * n

    def add(self, dt: float, tau: float, *amounts: float) -> None:
        fade = math.exp(-dt / tau)
        self.sums = [s * fade + a for s, a in zip(self.sums, amounts)]

    def ratio(self, i: int, j: int) -> float | None:
        return self.sums[i] / self.sums[j] if self.sums[j] > 0 else None


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _inside(path) -> bool:
    """An artifact path names a file inside the run folder (relative, no ``..``): a crafted
    event cannot make a view read a file elsewhere."""
    if not isinstance(path, str) or not path or "\0" in path:
        return False
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return not path.startswith(("/", "\\")) and ".." not in parts and ":" not in parts[0]


def _text(value) -> str:
    return value if isinstance(value, str) else str(value)


@dataclass
class JobState:
    """Everything a view needs, updated event by event with :meth:`apply`."""

    status: str = "queued"
    created: float | None = None
    started: float | None = None
    ended: float | None = None
    done: float = 0.0
    total: float | None = None
    own: tuple = (0.0, None)  # rank 0's done and total when the ranks share the work
    split: bool = False  # the ranks share the work: done and total are the whole job's
    unit: str = "step"
    message: str | None = None
    # each metric's points (step, value, t) in a list-like Series (skiff/jobs/series.py)
    metrics: dict[str, Series | list[tuple[int | None, float, float]]] = field(
        default_factory=dict)
    logs: list[tuple[float, str, str]] = field(default_factory=list)
    artifacts: list[dict] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None
    progress_times: list[tuple[float, float]] = field(default_factory=list)
    error_from_comm: bool = False  # the error shown is a rank's MPI failure (maybe a symptom)
    n_events: int = 0
    inferred: str | None = None  # why the final status was inferred by a reader, not written
    step: int | None = None  # the step (iteration) of the newest metric
    # the work done and in all where the kernel reports it with its progress (an OCR job's
    # pixels: a page of 3000x2000 is 100 small images' work): the ETA is then the work left
    # at the recent rate of work, not the units left at the recent rate of units
    work: float | None = None
    work_total: float | None = None
    # rate and ETA, smoothed (see :meth:`eta`): (units, seconds) and (units, seconds, steps)
    _timed: _Window = field(default_factory=lambda: _Window(2), repr=False)
    _stepped: _Window = field(default_factory=lambda: _Window(3), repr=False)
    _point: tuple | None = field(default=None, repr=False)    # (t, best) of the last progress
    _best: float = field(default=0.0, repr=False)              # the most progress seen
    _first: float = field(default=0.0, repr=False)             # time of the first progress
    _anchor: tuple | None = field(default=None, repr=False)   # (t, best, step): last with a step
    _step_fresh: bool = field(default=False, repr=False)      # a metric step since that progress
    # (work, seconds, units) over the fading window
    _worked: _Window = field(default_factory=lambda: _Window(3), repr=False)
    _wpoint: tuple | None = field(default=None, repr=False)   # (t, work, done) of the last
    # a unit's own part of the time, besides its work (an OCR page's fixed cost: a sparse
    # page of 4 MP costs ~0.4 s a page and ~0.07 s a MP, round 44): the seconds of units
    # given out together (``batch``: the kernel's batch) are fit to ``a * units + b * work``
    # over the fading window, (du^2, du dw, dw^2, du dt, dw dt); ``_seg`` is the
    # (units, work, seconds) of the batch not yet whole; ``_unit_work`` the kernel's
    # (batch, the work one unit's own part is worth) until the fit says (``progress_from``;
    # None: the work alone, as for kinds and run folders that give none)
    _fit: _Window = field(default_factory=lambda: _Window(5), repr=False)
    _seg: tuple = field(default=(0.0, 0.0, 0.0), repr=False)
    _unit_work: tuple | None = field(default=None, repr=False)
    # (t, done, work) where the units' work began, as the kernel said (an info event's
    # ``progress_from``: an OCR job's models are made, its first image is read now): the first
    # progress is measured from there (round 43)
    _from: tuple | None = field(default=None, repr=False)
    # the units the kernel reads together (``progress_from``'s ``batch``: an OCR pipeline's
    # four images), whose results come out together: at a batch's first result the time of
    # the whole batch is spent and its other units are read, not left (round 45)
    _batch: float = field(default=1.0, repr=False)
    # (done, work) where the batch in hand began: its ready units weigh as its given-out ones
    _bstart: tuple | None = field(default=None, repr=False)
    # the units read and not yet given out, as the kernel says with its progress (``ready``:
    # exact where a batch is cut short, at a full pixel budget); ``_ready_said`` once any
    # progress said it (else they are counted in ``_batch``s); ``_bend``: the (done, work)
    # of the last progress that gave out a batch's last unit
    _ready_now: float | None = field(default=None, repr=False)
    _ready_said: bool = field(default=False, repr=False)
    _bend: tuple | None = field(default=None, repr=False)

    @property
    def final(self) -> bool:
        return self.status in FINAL

    def apply(self, event: dict) -> None:
        """Fold one event in. Fields of the wrong type (a damaged or crafted line) are
        ignored or read as text, never raised on."""
        self.n_events += 1
        t = _number(event.get("t"))
        kind = event.get("type")
        if kind == "metric":  # first: most events of a training are metrics
            value = event.get("value")
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                return
            name = event.get("name", "?")
            series = self.metrics.get(name) if type(name) is str else None
            if series is None:
                # flat columns, not a tuple a point (~150 bytes: round 42)
                series = self.metrics.setdefault(_text(name), Series())
            step = event.get("step")
            step = step if type(step) is int else None
            series.append((step, value, t))
            if step is not None:
                self._step_fresh = step != self.step or self._step_fresh
                self.step = step
        elif kind == "status":
            status = event.get("status", self.status)
            if status not in STATUSES:
                return
            if event.get("inferred") and not self.final:
                self.inferred = _text(event.get("message"))
            if self.final and status not in FINAL:
                return  # a late 'running' never revives a finished job
            if self.final and status in FINAL and self.status == "failed":
                return  # the first failure is the one that counts
            self.status = status
            if status == "queued" and self.created is None:
                self.created = t
            elif status == "running" and self.started is None:
                self.started = t
            elif status in FINAL:
                self.ended = t
                if event.get("message") and status != "done":
                    self.error = self.error or _text(event["message"])
        elif kind == "progress":
            self.done = _number(event.get("done")) or 0.0
            total = _number(event.get("total"))
            self.total = total if total is not None and total > 0 else None
            self.own = (self.done, self.total)  # rank 0's part (skiff.jobs.split)
            work, work_total = _number(event.get("work")), _number(event.get("work_total"))
            if work is None or work_total is None or not 0 <= work <= work_total \
                    or work_total <= 0 or not math.isfinite(work_total):
                work = work_total = None
            self.work, self.work_total = work, work_total
            self.unit = _text(event.get("unit", self.unit))
            ready = _number(event.get("ready"))
            self._ready_now = ready if ready is not None and 0 <= ready < 1e9 else None
            self._ready_said = self._ready_said or self._ready_now is not None
            if event.get("message") is not None:
                self.message = _text(event["message"])
            if t is not None:
                self.progress_times.append((t, self.done))
                del self.progress_times[:-50]
                self._measure(float(t))
        elif kind == "log":
            self.logs.append((t, _text(event.get("level", "info")),
                              _text(event.get("message", ""))))
            del self.logs[:-LOG_TAIL]
        elif kind == "artifact":
            if _inside(event.get("path")):
                self.artifacts.append(event)
        elif kind == "info":
            start = event.get("progress_from")
            if isinstance(start, dict) and t is not None and self._point is None:
                self._from = (float(t), _number(start.get("done")) or 0.0,
                              _number(start.get("work")))
                batch, per_unit = _number(start.get("batch")), _number(start.get("per_unit"))
                self._batch = float(int(batch)) if batch is not None and 1 <= batch < 1e6 \
                    else 1.0
                if per_unit is not None and 0 <= per_unit < 1e300:  # else the work alone
                    self._unit_work = (batch if batch is not None and 1 <= batch < 1e6
                                       else 1.0, per_unit)
            self.info.update({k: v for k, v in event.items()
                              if k not in ("t", "type", "rank", "progress_from")})
        elif kind == "error":
            rank = event.get("rank", 0)
            rank = rank if isinstance(rank, int) else 0
            msg = _text(event.get("message", "error"))
            prefix = f"rank {rank}: " if rank and rank > 0 and not msg.startswith("rank ") else ""
            cause = event.get("dead_rank") is not None and self.error_from_comm
            if self.error is None or cause:
                self.error = f"{prefix}{msg}"
                tb = event.get("traceback")
                self.traceback = _text(tb) if tb else self.traceback
                self.error_from_comm = bool(event.get("comm_error"))

    # rate and ETA ---------------------------------------------------------------------------
    def _measure(self, t: float) -> None:
        """Fold the progress event just applied (at time ``t``) into the smoothed rates.

        Two estimates: units per second between progress events, and, where a metric names
        the step each progress event belongs to (a solve's iteration: ``residual`` at step
        ``it``, then its progress in decades), units per step and seconds per step between
        such events: for a solve, the convergence rate (decades per iteration) and the time
        per iteration, each smoothed on its own. Rates are measured on the best progress so
        far, since a residual may rise for a while (CG's is not monotone)."""
        self._measure_work(t)
        best = self._best = max(self._best, self.done)
        if self._point is None:
            self._point, self._first = (t, best), t
            start = self._from
            if start is not None and start[0] < t:
                # the first units took the time since their work began: without it, a batch
                # of results given out together (an OCR job's four images, their overlays
                # drawn between them) was the rate: 'ETA 1.8 s' for 8 s left (round 43)
                self._first = start[0]
                self._timed.add(0.0, 1.0, max(0.0, best - start[1]), t - start[0])
                self.progress_times.insert(-1, (start[0], start[1]))
        elif t > self._point[0]:
            t0, d0 = self._point
            self._timed.add(t - t0, _tau(t - self._first), best - d0, t - t0)
            self._point = (t, best)
        if not self._step_fresh:
            return
        self._step_fresh = False
        anchor, self._anchor = self._anchor, (t, best, self.step)
        if anchor is None:
            return
        t0, d0, s0 = anchor
        if self.step <= s0 or t <= t0:  # no step or no time between them: measure from before
            self._anchor = anchor
            return
        self._stepped.add(t - t0, _tau(t - self._first), best - d0, t - t0, self.step - s0)

    def _measure_work(self, t: float) -> None:
        """Fold the work of the progress just applied into the rate of work (work per
        second over the same fading window) and into the fit of a unit's own part; a
        progress without work forgets them."""
        if self.work is None:
            self._worked, self._wpoint, self._fit = _Window(3), None, _Window(5)
            self._seg = (0.0, 0.0, 0.0)
            return
        self._mark_batch()
        if self._wpoint is None:
            self._wpoint = (t, self.work, self.done)
            start = self._from
            if self._point is None and start is not None and start[0] < t \
                    and start[2] is not None and self.work >= start[2]:
                self._add_work(1.0, max(0.0, self.done - start[1]),
                               self.work - start[2], t - start[0])
        elif t > self._wpoint[0]:
            t0, w0, d0 = self._wpoint
            self._add_work(_tau(t - self._first), max(0.0, self.done - d0),
                           max(0.0, self.work - w0), t - t0, t - self._first)
            self._wpoint = (t, max(w0, self.work), max(d0, self.done))

    def _mark_batch(self) -> None:
        """Keep where the batch in hand began (``_bstart``): the last batch boundary at or
        before this progress, its work interpolated where one event passed it."""
        if self._from is None:
            return
        d0, w0 = self._from[1], self._from[2]
        if self._bstart is None:
            self._bstart = (d0, w0 if w0 is not None else 0.0)
        if self._ready_said:  # the kernel says: the batch began after the last one's end
            self._bstart = self._bend or self._bstart
            if self._ready_now == 0:
                self._bend = (max(self.done, self._bstart[0]), self.work)
            return
        if self._batch <= 1:
            return
        if self._wpoint is not None:
            prev_d, prev_w = self._wpoint[2], self._wpoint[1]
        else:
            prev_d, prev_w = self._bstart
        done, work = max(self.done, prev_d), max(self.work, prev_w)
        edge = d0 + ((done - d0) // self._batch) * self._batch
        if edge <= self._bstart[0]:
            return
        share = (edge - prev_d) / (done - prev_d) if done > prev_d else 1.0
        self._bstart = (edge, prev_w + (work - prev_w) * min(1.0, max(0.0, share)))

    def _add_work(self, tau: float, du: float, dw: float, dt: float,
                  elapsed: float = 0.0) -> None:
        self._worked.add(dt, tau, dw, dt, du)
        if self._unit_work is None:
            return
        # the fit takes a whole batch at a time: its results come out together, so the
        # time between two of them is no unit's time (round 43); a batch is one point
        u, w, s = (a + b for a, b in zip(self._seg, (du, dw, dt)))
        if u < self._unit_work[0] - 1e-9:
            self._seg = (u, w, s)
            return
        # over the whole job's time, not the rate's fifth of it: a fit needs batches of
        # two mixes, which may be far apart; a slow start is still forgotten in time
        self._seg = (0.0, 0.0, 0.0)
        self._fit.add(s, max(elapsed, s, 1e-9), u * u, u * w, w * w, u * s, w * s)

    def _per_unit(self) -> float:
        """The work a unit's own part is worth: the fit of the batches' times to ``a *
        units + b * work`` (``a / b``; inf where the work costs nothing, 0 where the units'
        own part does), where the batches so far tell them apart; else the kernel's
        guess (``progress_from``'s ``per_unit``; 0 for kinds that give none: work alone)."""
        if self._unit_work is None:
            return 0.0
        uu, uw, ww, ut, wt = self._fit.sums
        det = uu * ww - uw * uw
        # two batches of the same mix (all pages alike) tell nothing apart: the guess
        if uu <= 0 or ww <= 0 or det <= 0.1 * uu * ww:
            return self._unit_work[1]
        a, b = (ww * ut - uw * wt) / det, (uu * wt - uw * ut) / det
        if a <= 0:
            return 0.0
        return a / b if b > 0 else math.inf

    def _per_step(self) -> tuple[float, float] | None:
        """(units per step, seconds per step) over the recent window, if steps are known."""
        per, time_ = self._stepped.ratio(0, 2), self._stepped.ratio(1, 2)
        return None if per is None or time_ is None else (per, time_)

    def rate(self) -> float | None:
        """Units per second over the recent past (an exponentially fading window, a fifth of
        the time so far: ``RATE_WINDOW``); None before two progress events or while nothing
        moves."""
        stepped = self._per_step()
        if stepped is not None and stepped[1] > 0:
            rate = stepped[0] / stepped[1]
        else:
            rate = self._timed.ratio(0, 1)
            # the batch in hand's units are read with its first result (see :meth:`eta`)
            ready = self._ready(max(0.0, float(self.total) - self._best)) \
                if self.total else 0.0
            if rate is not None and ready and self._timed.sums[1] > 0:
                rate = (self._timed.sums[0] + ready) / self._timed.sums[1]
        if rate is not None and self.split and self.own[1] and self.total:
            rate *= float(self.total) / float(self.own[1])  # measured on rank 0's part
        return rate if rate is not None and rate > 0 else None

    def eta(self) -> float | None:
        """Seconds left: the units left over the recent rate; where the progress carries
        its work (``work``, ``work_total``: pixels, pages), the work left over the recent
        rate of work, so large pages after small images weigh what they take. Where progress
        events belong to steps, (units left / units per step) steps of the recent time per
        step: for a solve, decades left over decades per iteration, times seconds per
        iteration."""
        if self.total is None or self.final:
            return None
        # ranks that share the work (skiff.jobs.split): the whole job's rest at its rate
        done = self.done if self.split else self._best
        left = max(0.0, float(self.total) - done)
        # the units of the batch in hand that are read but not yet given out: its time is
        # spent, so they are work done, not left (at the first result of a batch of four the
        # rate was one unit's work over four units' time: 'ETA' 2-7x the time left, round 45)
        ready = self._ready(left)
        if self.work is not None and not self.split:
            # the work left and the units' own part (a page's fixed cost) at their rate
            r = self._per_unit()
            work, seconds, units = self._worked.sums
            work_left = max(0.0, self.work_total - self.work)
            # the ready units' work (their sizes are not said): as the batch's units given
            # out (a batch reads neighbours: a file's pages, one folder's photos)
            ready_work = 0.0
            if ready and self._bstart is not None and self._best > self._bstart[0]:
                ready_work = min(work_left, ready * max(0.0, self.work - self._bstart[1])
                                 / (self._best - self._bstart[0]))
            if math.isinf(r):
                spent, rest = units + ready, left - ready
            else:
                spent = work + ready_work + r * (units + ready)
                rest = work_left - ready_work + r * (left - ready)
            if spent > 0 and seconds > 0:
                return self._plausible(max(0.0, rest) * seconds / spent)
        stepped = self._per_step()
        if stepped is not None and stepped[0] > 0:
            return self._plausible(left / stepped[0] * stepped[1])
        rate = self.rate()  # with the ready units of the batch in hand
        return None if rate is None else self._plausible((left - ready) / rate)

    def _ready(self, left: float) -> float:
        """The units of the batch in hand read with its first result and not yet given out
        (``_batch`` units a batch, counted from where the units' work began); 0 where the
        kernel reads one at a time, the ranks share the work or no unit has come yet."""
        if self.split or self._point is None:
            return 0.0
        if self._ready_said:
            return min(self._ready_now or 0.0, left)
        if self._batch <= 1 or self._from is None:
            return 0.0
        into = (self._best - self._from[1]) % self._batch
        return min(self._batch - into, left) if into > 1e-9 else 0.0

    def _plausible(self, eta: float) -> float | None:
        """``eta``, or None (unknown) where it is over ``ETA_RATIO`` times the time so far
        and over an hour: a solve that stagnates gains a sliver of a decade an iteration,
        which read as "ETA 150161 h"."""
        spent = (self._point[0] - self._first) if self._point is not None else 0.0
        return None if eta > 3600 and eta > ETA_RATIO * max(spent, 1.0) else eta

    def stalled(self, now: float) -> float | None:
        """Seconds since the last progress event of a running job gone quiet: longer than
        ``STALL_MIN_S`` and ``STALL_RATIO`` times its usual gap between progress events (a
        job held by a slow file system, a lock, a peer); None while it moves, before two
        progress events and once it has ended. Views show it instead of the rate and ETA,
        which were those of before ('ETA 0.8 s' for a minute)."""
        if self.status != "running" or len(self.progress_times) < 2 \
                or self.finishing() is not None:
            return None
        first, last = self.progress_times[0][0], self.progress_times[-1][0]
        gap = (last - first) / (len(self.progress_times) - 1)
        quiet = now - last
        return quiet if quiet > max(STALL_MIN_S, STALL_RATIO * gap) else None

    def finishing(self) -> str | None:
        """What a running job does after its last unit (its progress at its total: an
        ocr-rec run exporting and reading its held-out crops for minutes, a training's last
        checkpoint): its newest log line since that progress, "" if it said none; None for a
        job still on its units or ended. It is working, not stalled: the views say this
        where they said "no progress for 3 min" (round 41)."""
        if self.status != "running" or not self.total or self.done < self.total \
                or not self.progress_times:
            return None
        since = self.progress_times[-1][0]
        for t, _level, message in reversed(self.logs):
            if t is None or t < since:
                break
            if message.strip():
                return message.strip().splitlines()[0]
        return ""

    @property
    def fraction(self) -> float | None:
        """How far the job is, 0 to 1 (None without a total)."""
        if not self.total:
            return None
        return min(1.0, max(0.0, self.done / float(self.total)))

    def elapsed(self, now: float) -> float | None:
        if self.started is None:
            return None
        return (self.ended or now) - self.started

    def last(self, metric: str) -> float | None:
        series = self.metrics.get(metric)
        return series[-1][1] if series else None


# an ETA is shown once the job's progress has been measured over ETA_AFTER_S seconds (from
# its first progress event to its latest), or sooner where it reaches no further ahead than
# ETA_REACH times the time measured (half a solve done at a steady rate): before that the
# rate is that of the first few units alone. An OCR job's three small images in 0.2 s said
# "ETA 3.2 s, 14.3 images/s" for the 46 pages ahead (about 2 min 30 s); a few seconds of
# progress carry the larger pages' time.
ETA_AFTER_S, ETA_REACH = 5.0, 2.0


def shown_eta(state, now: float | None = None) -> float | None:
    """``state.eta()`` once the progress it rests on spans at least ``ETA_AFTER_S`` seconds
    (the job's first progress event to its latest, or a full record of them), or the ETA is
    at most ``ETA_REACH`` times that span; else None (shown as unknown). A job's first units
    may be unlike the rest (small images before large pages, a first step that compiles),
    and an ETA of a minute from a fraction of a second of them is no estimate. With ``now``,
    counted down from the latest progress (never under 0): an OCR folder's batch of four
    pages under load takes ~50 s, and the ETA shown stood still through it (2.0-2.5x the
    time left by the batch's end, round 46)."""
    eta = state.eta()
    if eta is None:
        return None
    point = getattr(state, "_point", None)
    if now is not None and point is not None:
        eta = max(0.0, eta - max(0.0, float(now) - float(point[0])))
    times = getattr(state, "progress_times", None) or []
    if len(times) < 2:
        return None
    span = float(times[-1][0]) - float(times[0][0])
    if span >= ETA_AFTER_S or len(times) >= PROGRESS_KEPT or eta <= ETA_REACH * span:
        return eta
    return None


PROGRESS_KEPT = 50  # JobState keeps its last 50 progress times: a full record spans enough

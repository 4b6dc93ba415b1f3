"""The state of a job, folded from its event log."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .events import FINAL

__all__ = ["JobState"]

LOG_TAIL = 200
RATE_TAU_S = 3.0  # time constant of the smoothed rates: older samples weigh exp(-age / tau)


def _ema(old: float | None, sample: float, dt: float) -> float:
    """An exponential moving average in time: a sample ``dt`` seconds long moves the average
    by ``1 - exp(-dt / RATE_TAU_S)`` of the way (the first sample is taken as it is)."""
    if old is None:
        return sample
    return old + (1.0 - math.exp(-dt / RATE_TAU_S)) * (sample - old)


@dataclass
class JobState:
    """Everything a view needs, updated event by event with :meth:`apply`."""

    status: str = "queued"
    created: float | None = None
    started: float | None = None
    ended: float | None = None
    done: float = 0.0
    total: float | None = None
    unit: str = "step"
    message: str | None = None
    metrics: dict[str, list[tuple[int | None, float, float]]] = field(default_factory=dict)
    logs: list[tuple[float, str, str]] = field(default_factory=list)
    artifacts: list[dict] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    error: str | None = None
    traceback: str | None = None
    progress_times: list[tuple[float, float]] = field(default_factory=list)
    error_from_comm: bool = False  # the error shown is a rank's MPI failure (maybe a symptom)
    n_events: int = 0
    step: int | None = None  # the step (iteration) of the newest metric
    # rate and ETA, smoothed (see :meth:`eta`): units per second, units per step, s per step
    _rate: float | None = field(default=None, repr=False)
    _per_step: float | None = field(default=None, repr=False)
    _step_time: float | None = field(default=None, repr=False)
    _point: tuple | None = field(default=None, repr=False)    # (t, done) of the last progress
    _anchor: tuple | None = field(default=None, repr=False)   # (t, done, step): last with a step
    _step_fresh: bool = field(default=False, repr=False)      # a metric step since that progress

    @property
    def final(self) -> bool:
        return self.status in FINAL

    def apply(self, event: dict) -> None:
        self.n_events += 1
        t = event.get("t")
        kind = event.get("type")
        if kind == "status":
            status = event.get("status", self.status)
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
                    self.error = self.error or event["message"]
        elif kind == "progress":
            self.done = float(event.get("done") or 0)
            self.total = event.get("total")
            self.unit = event.get("unit", self.unit)
            self.message = event.get("message", self.message)
            if t is not None:
                self.progress_times.append((t, self.done))
                del self.progress_times[:-50]
                self._measure(float(t))
        elif kind == "metric":
            series = self.metrics.setdefault(event.get("name", "?"), [])
            series.append((event.get("step"), event.get("value"), t))
            step = event.get("step")
            if isinstance(step, int) and not isinstance(step, bool):
                self._step_fresh = step != self.step or self._step_fresh
                self.step = step
        elif kind == "log":
            self.logs.append((t, event.get("level", "info"), event.get("message", "")))
            del self.logs[:-LOG_TAIL]
        elif kind == "artifact":
            self.artifacts.append(event)
        elif kind == "info":
            self.info.update({k: v for k, v in event.items() if k not in ("t", "type", "rank")})
        elif kind == "error":
            rank = event.get("rank", 0)
            msg = event.get("message", "error")
            prefix = f"rank {rank}: " if rank and rank > 0 and not msg.startswith("rank ") else ""
            cause = event.get("dead_rank") is not None and self.error_from_comm
            if self.error is None or cause:
                self.error = f"{prefix}{msg}"
                self.traceback = event.get("traceback") or self.traceback
                self.error_from_comm = bool(event.get("comm_error"))

    # rate and ETA ---------------------------------------------------------------------------
    def _measure(self, t: float) -> None:
        """Fold the progress event just applied (at time ``t``) into the smoothed rates.

        Two estimates: units per second between progress events, and, where a metric names
        the step each progress event belongs to (a solve's iteration: ``residual`` at step
        ``it``, then its progress in decades), units per step and seconds per step between
        such events: for a solve, the convergence rate (decades per iteration) and the time
        per iteration, each smoothed on its own."""
        done = self.done
        if self._point is not None and done < self._point[1]:   # progress went back: restart
            self._rate = self._per_step = self._step_time = self._anchor = None
            self._point = None
        if self._point is None:
            self._point = (t, done)
        elif t > self._point[0]:
            t0, d0 = self._point
            self._rate = _ema(self._rate, (done - d0) / (t - t0), t - t0)
            self._point = (t, done)
        if not self._step_fresh:
            return
        self._step_fresh = False
        anchor, self._anchor = self._anchor, (t, done, self.step)
        if anchor is None:
            return
        t0, d0, s0 = anchor
        if self.step <= s0 or t <= t0:  # no step or no time between them: measure from before
            self._anchor = anchor
            return
        steps = self.step - s0
        self._per_step = _ema(self._per_step, (done - d0) / steps, t - t0)
        self._step_time = _ema(self._step_time, (t - t0) / steps, t - t0)

    def rate(self) -> float | None:
        """Units per second, smoothed (an exponential moving average in time); None before
        two progress events or while nothing moves."""
        if self._per_step is not None and self._step_time:
            rate = self._per_step / self._step_time
        else:
            rate = self._rate
        return rate if rate is not None and rate > 0 else None

    def eta(self) -> float | None:
        """Seconds left: the units left over the smoothed rate. Where progress events belong
        to steps, (units left / units per step) steps of the smoothed time per step."""
        if self.total is None or self.final:
            return None
        left = max(0.0, float(self.total) - self.done)
        if self._per_step is not None and self._per_step > 0 and self._step_time is not None:
            return left / self._per_step * self._step_time
        rate = self.rate()
        return None if rate is None else left / rate

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

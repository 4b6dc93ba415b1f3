"""The state of a job, folded from its event log."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .events import FINAL, STATUSES

__all__ = ["JobState"]

LOG_TAIL = 200


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
    inferred: str | None = None  # why the final status was inferred by a reader, not written

    @property
    def final(self) -> bool:
        return self.status in FINAL

    def apply(self, event: dict) -> None:
        """Fold one event in. Fields of the wrong type (a damaged or crafted line) are
        ignored or read as text, never raised on."""
        self.n_events += 1
        t = _number(event.get("t"))
        kind = event.get("type")
        if kind == "status":
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
            self.unit = _text(event.get("unit", self.unit))
            if event.get("message") is not None:
                self.message = _text(event["message"])
            if t is not None:
                self.progress_times.append((t, self.done))
                del self.progress_times[:-50]
        elif kind == "metric":
            value = event.get("value")
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                return
            series = self.metrics.setdefault(_text(event.get("name", "?")), [])
            step = event.get("step")
            series.append((step if isinstance(step, int) else None, value, t))
        elif kind == "log":
            self.logs.append((t, _text(event.get("level", "info")),
                              _text(event.get("message", ""))))
            del self.logs[:-LOG_TAIL]
        elif kind == "artifact":
            if _inside(event.get("path")):
                self.artifacts.append(event)
        elif kind == "info":
            self.info.update({k: v for k, v in event.items() if k not in ("t", "type", "rank")})
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

    def rate(self) -> float | None:
        """Units per second over the recent progress events."""
        pts = self.progress_times
        if len(pts) < 2:
            return None
        (t0, d0), (t1, d1) = pts[0], pts[-1]
        if t1 <= t0 or d1 <= d0:
            return None
        return (d1 - d0) / (t1 - t0)

    def eta(self) -> float | None:
        rate = self.rate()
        if rate is None or self.total is None or self.final:
            return None
        return max(0.0, (float(self.total) - self.done) / rate)

    def elapsed(self, now: float) -> float | None:
        if self.started is None:
            return None
        return (self.ended or now) - self.started

    def last(self, metric: str) -> float | None:
        series = self.metrics.get(metric)
        return series[-1][1] if series else None

"""The reporting protocol every kernel speaks: progress, metrics, logs, artifacts, stop.

Kernels take a :class:`Reporter` and know nothing of jobs or notebooks. :class:`NullReporter`
makes a kernel a plain library call; the jobs layer implements the run-folder reporter
(``skiff.jobs.reporter.RunReporter``) on this protocol.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["Reporter", "NullReporter", "JobCancelled"]


class JobCancelled(Exception):
    """Raised by a kernel (or :meth:`Reporter.check`) when asked to stop."""


class Reporter:
    """The interface every kernel reports through. All methods are cheap to call often."""

    rank: int = 0
    world_size: int = 1
    run_dir: Path | None = None

    def progress(self, done: float, total: float | None = None, *, unit: str = "step",
                 message: str | None = None, work: float | None = None,
                 work_total: float | None = None) -> None:
        """``done`` out of ``total`` units (total None: unknown); ``work`` / ``work_total``:
        the same progress weighted by work (pixels, pages) where units differ in cost, which
        the run-folder reporter records for the ETA (``JobState.eta``)."""

    def metric(self, name: str, value: float, *, step: int | None = None) -> None:
        """One scalar measurement, e.g. ``metric("loss", 2.31, step=10)``."""

    def sample(self, name: str, value: float, *, step: int | None = None) -> None:
        """A measurement of how the run goes rather than of what it computes (a learning
        rate, a throughput, the memory in use, a gradient norm), reported every step and
        drawn as a curve: a reporter may keep only some of them, at most so many a second
        per name, and always the latest at :meth:`flush` (the run-folder reporter: ten a
        second). ``metric`` keeps every value (a loss, a residual)."""
        self.metric(name, value, step=step)

    def metrics(self, values: dict, *, step: int | None = None) -> None:
        for name, value in values.items():
            self.metric(name, value, step=step)

    def log(self, message: str, *, level: str = "info") -> None:
        """A line for the job's log."""

    def info(self, **fields) -> None:
        """Structured facts about the run (device, plan, sizes) for the record."""

    def artifact(self, name: str, path: str | os.PathLike, *, kind: str = "file") -> Path:
        """Register a file the job produced; returns where it is kept."""
        return Path(path)

    def flush(self) -> None:
        """Write what is held back now (a throttled progress, the latest :meth:`sample` of
        each name: the run-folder reporter keeps them and writes them at most every so
        often); a kernel calls it before it waits on something, so the last step shows
        while it waits, and the runner at the end. Nothing held here."""

    def should_stop(self) -> bool:
        """True once the user has asked the job to stop; check at step boundaries."""
        return False

    def check(self) -> None:
        """Raise :class:`JobCancelled` when asked to stop."""
        if self.should_stop():
            raise JobCancelled("cancelled by request")


class NullReporter(Reporter):
    """Reports nothing and never stops: kernels as plain library calls."""

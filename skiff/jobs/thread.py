"""ThreadRunner: the embedded default. The job runs in this process, on a daemon thread, and
sees notebook objects; the cell that started it returns at once."""

from __future__ import annotations

import threading
import traceback
from typing import TYPE_CHECKING

from .reporter import JobCancelled, RunReporter
from .store import write_json

if TYPE_CHECKING:
    from .job import Job

__all__ = ["ThreadRunner"]


class ThreadRunner:
    name = "thread"

    def __init__(self):
        self._threads: dict[str, threading.Thread] = {}
        self._cancel: dict[str, threading.Event] = {}

    def start(self, job: Job, fn, config) -> Job:
        """Run ``fn(config, reporter)`` for ``job`` on a new thread."""
        cancel = threading.Event()
        self._cancel[job.id] = cancel
        thread = threading.Thread(target=self._run, args=(job, fn, config, cancel),
                                  name=f"skiff-job-{job.id}", daemon=True)
        self._threads[job.id] = thread
        job.attach(self)
        thread.start()
        return job

    def _run(self, job: Job, fn, config, cancel: threading.Event) -> None:
        reporter = RunReporter(job.run_dir, cancel_event=cancel)
        reporter.emit("status", status="running")
        try:
            value = fn(config, reporter)
        except JobCancelled as exc:
            reporter.flush()
            reporter.emit("status", status="cancelled", message=str(exc))
        except BaseException as exc:  # the job fails; the notebook does not
            tb = traceback.format_exc()
            (job.run_dir / "logs" / "traceback.txt").write_text(tb)
            reporter.flush()
            reporter.emit("error", message=f"{type(exc).__name__}: {exc}", traceback=tb)
            reporter.emit("status", status="failed", message=f"{type(exc).__name__}: {exc}")
        else:
            job.value = value
            reporter.flush()
            write_result(job, value)
            final = "cancelled" if reporter.should_stop() else "done"
            reporter.emit("status", status=final)
        finally:
            job.refresh()
            job.notify_done()

    def cancel(self, job: Job, *, grace: float = 5.0) -> None:
        event = self._cancel.get(job.id)
        if event is not None:
            event.set()

    def join(self, job: Job, timeout: float | None = None) -> None:
        thread = self._threads.get(job.id)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


def write_result(job: Job, value) -> None:
    summary = value.to_json() if hasattr(value, "to_json") else value
    if summary is None:
        summary = {}
    if not isinstance(summary, dict):
        summary = {"value": summary}
    write_json(job.run_dir / "result.json", summary)

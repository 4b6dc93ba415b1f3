"""ThreadRunner: the embedded default. The job runs in this process, on a daemon thread, and
sees notebook objects; the cell that started it returns at once."""

from __future__ import annotations

import atexit
import threading
import time
import traceback
from typing import TYPE_CHECKING

from .reporter import JobCancelled, RunReporter, returned_status
from .store import write_json
from .thread_output import kept_output

if TYPE_CHECKING:
    from .job import Job

__all__ = ["ThreadRunner", "EXIT_WAIT"]

# seconds a process that exits (a kernel shut down or restarted, the end of a script) gives its
# cancelled thread jobs to stop: Jupyter (jupyter_client's shutdown_wait_time, 5 s) sends a
# kernel that has not ended SIGTERM half-way, 2.5 s after its shutdown request, which ended a
# training writing its loss curve with no final status (round 38: 3 s here)
EXIT_WAIT = 1.5
# a thread job whose run folder is removed while it runs (``rm -rf`` of the runs folder):
# looked for every FOLDER_LOOK_S; then the job is cancelled (a kind that asks
# ``should_stop`` stops at its next look) and, still running FOLDER_GRACE_S later (a model
# loading, a direct solve, a step of minutes), stopped where it stands (JobCancelled raised
# in its thread at its next Python line). Before, it worked on until its next write failed,
# for nothing: nothing more of it can be recorded (round 44)
FOLDER_LOOK_S = 1.0
FOLDER_GRACE_S = 2.0
EXIT_MESSAGE = ("this process is exiting (a kernel shut down or restarted, or the end of a "
                "script): the job runs on one of its threads and ends with it; --runner "
                "process runs a job that outlives its kernel")


class ThreadRunner:
    name = "thread"

    def __init__(self):
        self._threads: dict[str, threading.Thread] = {}
        self._cancel: dict[str, threading.Event] = {}
        self._jobs: dict[str, Job] = {}
        self._reporters: dict[str, RunReporter] = {}
        self._in_kind: dict[str, threading.Lock] = {}  # held while a stop may be raised
        self._at_exit = False
        self._exiting = False  # stop_all cancelled the jobs: their status says why

    def start(self, job: Job, fn, config) -> Job:
        """Run ``fn(config, reporter)`` for ``job`` on a new thread."""
        cancel = threading.Event()
        self._cancel[job.id] = cancel
        thread = threading.Thread(target=self._run, args=(job, fn, config, cancel),
                                  name=f"skiff-job-{job.id}", daemon=True)
        self._threads[job.id] = thread
        self._jobs[job.id] = job
        if not self._at_exit:
            atexit.register(self.stop_all)
            self._at_exit = True
        job.attach(self)
        thread.start()
        threading.Thread(target=self._watch_folder, args=(job, thread, cancel),
                         name=f"skiff-folder-{job.id}", daemon=True).start()
        return job

    def _watch_folder(self, job: Job, thread: threading.Thread,
                      cancel: threading.Event) -> None:
        """Stop the job when its run folder is removed while it runs (see FOLDER_LOOK_S)."""
        import ctypes

        while thread.is_alive():
            thread.join(FOLDER_LOOK_S)
            if not thread.is_alive() or (job.run_dir / "config.json").is_file():
                continue
            cancel.set()
            thread.join(FOLDER_GRACE_S)
            gate = self._in_kind.get(job.id)
            if gate is None or not thread.is_alive():
                return
            with gate:  # only while the kind's code runs (not in the runner's own end)
                if self._in_kind.get(job.id) is gate and thread.ident is not None:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(thread.ident), ctypes.py_object(FolderRemoved))
                    self._in_kind.pop(job.id, None)
            return

    def stop_all(self, wait_s: float = EXIT_WAIT) -> list[str]:
        """The process exits: cancel every job still running on its threads and give them
        ``wait_s`` seconds in all to stop at a step (a training writes its checkpoint, so
        ``%jobs resume ID`` goes on from it); one still running then is recorded cancelled
        when it had seen the stop (it was writing its end: a training's loss curve), else
        failed, with why. Without this the job died with the process and was shown failed by
        a reader that could only guess. Returns the ids of the jobs it stopped."""
        running = [(t, self._jobs.get(jid), self._cancel.get(jid))
                   for jid, t in list(self._threads.items()) if t.is_alive()]
        running = [(t, job, cancel) for t, job, cancel in running
                   if job is not None and cancel is not None]
        self._exiting = True
        for _thread, job, cancel in running:
            try:
                job.emit("log", level="warning", message=f"cancelling: {EXIT_MESSAGE}")
            except OSError:
                pass
            cancel.set()
        deadline = time.monotonic() + wait_s
        for thread, job, _cancel in running:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive() and not job.refresh().final:
                reporter = self._reporters.get(job.id)
                stopping = reporter is not None and reporter.stop_seen
                try:
                    job.emit("status", status="cancelled" if stopping else "failed",
                             message=f"cancelled: {EXIT_MESSAGE} (it had stopped and was "
                                     f"writing its end)" if stopping
                             else f"still running when {EXIT_MESSAGE}")
                except OSError:
                    pass
        return [job.id for _t, job, _c in running]

    def _run(self, job: Job, fn, config, cancel: threading.Event) -> None:
        reporter = self._reporters[job.id] = RunReporter(job.run_dir, cancel_event=cancel)
        outcome = "it returned (job.value holds it)"  # what the job did, if its end is lost
        try:
            try:
                reporter.emit("status", status="running")
                gate = self._in_kind[job.id] = threading.Lock()
                try:
                    with kept_output(job.run_dir):  # what it prints, in its run folder too
                        value = fn(config, reporter)
                finally:  # from here (however the kind ended) a removed folder's stop is
                    with gate:  # not raised: only into the kind's own code
                        self._in_kind.pop(job.id, None)
                seen = reporter.stop_seen  # told to stop before it returned
            except JobCancelled as exc:
                outcome = job.lost_note("it was stopped in its step") \
                    if isinstance(exc, FolderRemoved) else "it was cancelled"
                reporter.flush()
                # what the kind attached (a solve's last iterate: partial.npz, its summary
                # as result.json), kept as a process job's worker keeps it (round 34)
                from .worker import keep_partial

                keep_partial(job.run_dir, exc, reporter, str(exc))
                reporter.emit("status", status="cancelled",
                              message=f"cancelled: {EXIT_MESSAGE}" if self._exiting else str(exc))
            except BaseException as exc:  # the job fails; the notebook does not
                tb = traceback.format_exc()
                outcome = message = job.lost_note(f"{type(exc).__name__}: {exc}")
                (job.run_dir / "logs" / "traceback.txt").write_text(tb)
                reporter.flush()
                reporter.emit("error", message=message, traceback=tb)
                reporter.emit("status", status="failed", message=message)
            else:
                job.value = value
                reporter.flush()
                try:
                    write_result(job, value)
                except OSError:
                    raise  # its end could not be written: below
                except Exception as exc:  # noqa: BLE001 - a result that is no JSON: failed
                    # (it raised out of the thread, the job stayed "running" and every
                    # follower waited for ever: a resumed OCR job, round 33)
                    tb = traceback.format_exc()
                    message = (f"its result could not be written "
                               f"({type(exc).__name__}: {exc})")
                    (job.run_dir / "logs" / "traceback.txt").write_text(tb)
                    reporter.emit("error", message=message, traceback=tb)
                    reporter.emit("status", status="failed", message=message)
                    return
                final = returned_status(reporter, seen)
                why = {"message": f"cancelled: {EXIT_MESSAGE}"} if (
                    final == "cancelled" and self._exiting) else {}
                reporter.emit("status", status=final, **why)
        except Exception as exc:  # noqa: BLE001 - its end could not be written: said here
            lost = f"its end could not be written ({type(exc).__name__}: {exc})"
            message = outcome if outcome.startswith("its run folder") \
                else job.lost_note(f"{outcome}; {lost}")
            if not isinstance(exc, OSError):
                # the run folder can be written, its writer failed (a bug, a value it could
                # not take): the end is written by another, or followers in other processes
                # (a terminal's jobs logs -f, the Lab sidebar) saw it "running" for ever
                try:
                    job.emit("status", status="failed", message=message)
                except Exception:  # noqa: BLE001 - this process knows it ended, below
                    pass
            job.end_unrecorded("failed", message)
        finally:
            job.refresh()
            job.notify_done()
            self._jobs.pop(job.id, None)
            self._threads.pop(job.id, None)
            self._cancel.pop(job.id, None)
            self._reporters.pop(job.id, None)
            self._in_kind.pop(job.id, None)

    def cancel(self, job: Job, *, grace: float = 5.0) -> None:
        event = self._cancel.get(job.id)
        if event is not None:
            event.set()

    def join(self, job: Job, timeout: float | None = None) -> None:
        thread = self._threads.get(job.id)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


class FolderRemoved(JobCancelled):
    """Raised in a thread job's code when its run folder was removed while it ran."""

    def __init__(self, *args):
        super().__init__(*args or ("its run folder was removed while it ran",))


def write_result(job: Job, value) -> None:
    summary = value.to_json() if hasattr(value, "to_json") else value
    if summary is None:
        summary = {}
    if not isinstance(summary, dict):
        summary = {"value": summary}
    write_json(job.run_dir / "result.json", summary, long_values_on_one_line=True)

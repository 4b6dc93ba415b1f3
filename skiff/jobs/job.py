"""``Job``: a handle on one run folder, live or reattached.

A Job's truth is its run folder; the object only caches the folded :class:`JobState` and, for
jobs run in this process, the live Python result (``job.value``).

A reader never writes into a job it does not run: when the process that ran a job is gone
without a final event, the job is *shown* as failed (or done, when its result.json is there)
with the reason, and the folder is left as it is. A folder whose config.json cannot be read is
a :class:`DamagedJob` in listings.
"""

from __future__ import annotations

import atexit
import html
import json
import os
import threading
import time
from pathlib import Path

from .events import FINAL, EventReader, EventWriter
from .folded import light_reader
from .shared_name import one_job
from .signals import NotJobProcess, identity_mismatch, process_identity
from .state import JobState, shown_eta
from .store import (
    DamagedRunFolder,
    apply_mode,
    find_run_dir,
    is_run_dir,
    json_safe,
    new_run_dir,
    owner,
    pid_alive,
    read_json,
    read_meta,
    write_json,
)
from .trust import check as check_trust
from .trust import sign, verdict

__all__ = ["Job", "JobFailed", "JobNotDone", "DamagedJob", "live_jobs"]

_LIVE: dict[str, Job] = {}
_LIVE_LOCK = threading.Lock()
CALLBACK_WAIT = 60.0  # seconds wait() gives the done callbacks when it has no timeout of its own
FOLDER_END_WAIT = 10.0  # seconds a second object of a job whose folder went waits for its runner
_WAIT_HOOKS: list = []  # fn(job), called by wait() once the job has ended (see on_wait)


def on_wait(fn) -> None:
    """Call ``fn(job)`` on the waiting thread each time :meth:`Job.wait` returns for an
    ended job. The widgets layer registers one that sends the job's views again: a view
    updated from another thread after its cell ended sends messages that a notebook runner
    (nbclient) no longer records, and a cell that waits for its jobs is where a notebook
    says "now show them as they ended"."""
    if fn not in _WAIT_HOOKS:
        _WAIT_HOOKS.append(fn)


REPR_ERROR = 100  # characters of the error a Job's repr shows


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _fraction(state: JobState) -> float | None:
    """The work done as a fraction of the total, to 4 places; None without a total."""
    return None if not state.total else round(state.done / float(state.total), 4)


def _eta_of(state: JobState, now: float) -> float | None:
    """Seconds left as the views show them (:func:`state.shown_eta`; None while the job is
    quiet, has ended or has not measured enough), to 0.1 s."""
    if state.status != "running" or state.stalled(now) is not None:
        return None
    eta = shown_eta(state)
    return None if eta is None else round(eta, 1)


class JobFailed(RuntimeError):
    """Raised by :meth:`Job.wait` (``raise_on_error=True``) for a failed job."""


class JobNotDone(RuntimeError):
    """Raised by :attr:`Job.value` while the job is still running: its value comes at its
    end (``job.wait().value`` waits for it). Round 42: it was None until then, and
    ``job.value.model`` said "'NoneType' object has no attribute 'model'"."""


def live_jobs() -> dict[str, Job]:
    with _LIVE_LOCK:
        return dict(_LIVE)


class Job:
    """A job: id, kind, config, status, events, result, error.

    Create one with :func:`skiff.jobs.launch`; reattach to any run folder with
    :meth:`Job.load` (``%jobs attach ID``).
    """

    def __init__(self, run_dir: str | Path, *, metrics: bool = True):
        self.run_dir = Path(run_dir)
        try:
            meta = read_meta(self.run_dir)
        except DamagedRunFolder as exc:
            raise DamagedRunFolder(f"run folder {self.run_dir.name} is damaged: {exc}") from None
        self.meta = meta
        self.id: str = meta["id"]
        self.kind: str = meta["kind"]
        self.config: dict = meta.get("config", {})
        self._value = None  # the live result object, for jobs run in this process
        self.runner = None  # set by the runner that started it, if in this process
        self.metrics_read = metrics  # False: a listing's snapshot, without the metrics
        # True: the state holds every metric's last point (its whole series when metrics)
        self.last_points = metrics
        if metrics:
            self._reader = EventReader(self.run_dir / "events.jsonl")
            self._state = JobState()
        else:  # from the fold kept at its end (folded.json), where it still holds
            self._reader, self._state, self.last_points = light_reader(
                self.run_dir / "events.jsonl", self.run_dir)
        self._state_lock = threading.Lock()
        self._done = threading.Event()
        self._callbacks: list = []
        self._callbacks_fired = False
        self._callbacks_ran = threading.Event()  # set once the done callbacks have returned
        self._callbacks_thread: threading.Thread | None = None
        self._held = False

    # construction ------------------------------------------------------------------------
    @classmethod
    def create(cls, kind: str, config: dict, *, target: str, runner: str, np: int = 1,
               device: str | None = None, label: str | None = None, root=None,
               **meta) -> Job:
        """Make a new run folder for a job of ``kind`` (``config.json`` and the ``queued``
        event) and return its Job; ``meta`` adds fields to ``config.json``."""
        job_id, run_dir = new_run_dir(kind.split(":")[-1].replace(".", "-"), root)
        fields = json.loads(json.dumps(json_safe({
            "id": job_id, "kind": kind, "label": label, "target": target,
            "config": config, "runner": runner, "np": np, "device": device,
            "created": time.time(), "owner": owner(), **meta})))
        write_json(run_dir / "config.json", sign(fields))  # what it runs, signed (trust.py)
        EventWriter(run_dir / "events.jsonl", rank=-1).write("status", status="queued")
        return cls(run_dir)

    @classmethod
    def load(cls, job_id_or_dir: str | Path, root=None, *, metrics: bool = True) -> Job:
        """The job with this id (or run folder); the same object if it lives here.
        ``metrics=False``: a snapshot for a listing that shows no metric (a terminal's
        ``jobs``): its metric events are not read (a 20,000-step training's 100,000), it is
        not followed, and it is not the object a later load returns.

        A ``--name`` several jobs share is refused as ``jobs show NAME`` refuses it
        (:class:`~skiff.jobs.shared_name.SeveralJobs`, a ``KeyError`` that lists them, newest
        first), unless they are one run resumed (its newest, the run going on): it took the
        newest silently (round 48)."""
        path = Path(job_id_or_dir)
        if not is_run_dir(path):
            picked = one_job(str(job_id_or_dir), "load", root, status=lambda d: load_or_damaged(
                d, root, metrics=False).status)
            path = Path(picked)
            if not (path.is_absolute() and is_run_dir(path)):
                path = find_run_dir(str(picked), root)
        with _LIVE_LOCK:
            for job in _LIVE.values():
                if job.run_dir.resolve() == path.resolve():
                    return job
        job = cls(path, metrics=metrics)
        if metrics:
            job._reattach()
        elif not job.refresh().final:  # its owner gone: shown as a follower would show it
            pid = job._owner_pid()
            if not job._owner_alive(pid) and not job._starting():
                job._mark_lost(pid)
        return job

    def attach(self, runner=None) -> None:
        """Mark the job as live in this process (``Job.load`` then returns this object),
        run by ``runner`` when one here runs it."""
        if runner is not None:
            self.runner = runner
        with _LIVE_LOCK:
            _LIVE[self.id] = self

    def _reattach(self) -> None:
        """Follow a job started elsewhere: notice when its process goes away."""
        state = self.refresh()
        if state.final:
            self._done.set()
            return
        pid = self._owner_pid()
        if not self._owner_alive(pid) and not self._starting():
            self._mark_lost(pid)
            return
        self.attach()
        threading.Thread(target=self._watch_foreign, args=(pid,), daemon=True,
                         name=f"skiff-attach-{self.id}").start()

    def hold(self) -> bool:
        """Count this process among the holders of a process job it follows from here (a
        reattached notebook view, ``skiff jobs show``), so that the ranks go on while it
        watches even if the launcher and every detached holder are gone. Released when the job
        ends or this process exits; a process killed outright leaves a record that names a
        dead process, which no longer counts (see :mod:`skiff.jobs.holders`). Returns whether
        this process now holds the job; a job run by this process, a thread job, a finished
        job or a folder this user may not write is not held."""
        if (self._held or self.runner is not None or self.meta.get("runner") != "process"
                or self.refresh().final):
            return False
        from .holders import add_holder
        try:
            add_holder(self.run_dir)
        except OSError:
            return False
        self._held = True
        atexit.register(self.release)
        threading.Thread(target=self._release_when_done, daemon=True,
                         name=f"skiff-hold-{self.id}").start()
        return True

    def release(self) -> None:
        """Stop holding the job (see :meth:`hold`)."""
        if self._held:
            from .holders import remove_holder
            remove_holder(self.run_dir)
            self._held = False

    def _release_when_done(self, poll: float = 0.5) -> None:
        while self._held and not self.refresh().final:
            time.sleep(poll)
        self.release()

    def _process_record(self) -> dict:
        proc = read_json(self.run_dir / "process.json", {})
        return proc if isinstance(proc, dict) else {}

    def _owner_pid(self) -> int | None:
        if self.meta.get("runner") == "process":
            return self._process_record().get("pid")
        return (self.meta.get("owner") or {}).get("pid")

    def _owner_alive(self, pid) -> bool:
        """The process that runs the job is alive (a reused pid of a process job, told by its
        recorded start time, is not). A Slurm job's process is Slurm's, on other machines
        (its script written, perhaps queued for hours): only its final event ends it here
        (the script's writer exiting showed it "failed ... without a final event")."""
        if self.meta.get("runner") == "slurm":
            return True
        if not pid_alive(pid):
            return False
        if self.meta.get("runner") == "process":
            ticks = self._process_record().get("start_ticks")
            now = process_identity(pid).get("start_ticks")
            if ticks is not None and now is not None and now != ticks:
                return False
        return True

    def _starting(self, grace: float = 60.0) -> bool:
        """A process job whose launcher has not yet written process.json (the folder is made
        first): starting, not lost, for ``grace`` seconds after it was created."""
        created = self.meta.get("created")
        return (self.meta.get("runner") == "process"
                and not (self.run_dir / "process.json").exists()
                and isinstance(created, (int, float)) and time.time() - created < grace)

    def _watch_foreign(self, pid: int | None) -> None:
        while not self.refresh().final:
            if pid is None and self._starting():
                time.sleep(0.25)
                continue
            pid = pid if pid is not None else self._owner_pid()
            if not self._owner_alive(pid):
                time.sleep(0.5)  # give a last event time to land
                if not self.refresh().final:
                    self._mark_lost(pid)
                break
            if not (self.run_dir / "config.json").is_file():  # removed while it runs: its
                # end can never be read here (`jobs wait ID` waited forever)
                self.end_unrecorded("failed", self.lost_note(
                    f"seen from process {os.getpid()}, which can read no more of it"))
                break
            time.sleep(0.25)
        self._done.set()

    def _mark_lost(self, pid) -> None:
        """The owner is gone without a final event: show the job as ended, write nothing (the
        folder belongs to the process that ran it). A job whose result.json is there did its
        work (the result is written before the final event) and is shown done."""
        if self.meta.get("runner") == "process":
            who = "launcher process"
        elif str(self.meta.get("command") or "").startswith("python -m skiff"):
            who = "terminal command (python -m skiff)"
        else:
            who = "kernel process"
        gone = f"the {who} that ran this job (pid {pid}) has exited"
        done = (self.run_dir / "result.json").is_file()
        status, message = (("done", f"{gone}; its final event is missing but its result.json "
                                    "is there") if done else
                           ("failed", f"{gone} without a final event"))
        self.end_unrecorded(status, message)

    def lost_note(self, message: str) -> str:
        """``message``, led by what happened when the run folder is gone (a training failed
        with "No such file or directory: .../logs/rank0.log"): what a runner says of a job
        whose end it could not write (:meth:`end_unrecorded`)."""
        if (self.run_dir / "config.json").is_file() and not self._being_removed(message):
            return message
        # a file of the removed folder not found is that removal again, its path the
        # folder's a third time (round 40): left out, what else the message says kept
        import re

        missing = re.compile(r"(?:;?\s*its end could not be written \()?(?:\w+Error: )?"
                             r"\[Errno 2\] No such file or directory: '"
                             + re.escape(str(self.run_dir)) + r"[^']*'\)?")
        rest = missing.sub("", str(message)).strip(" ;-")
        return (f"its run folder {self.run_dir} was removed while it ran (the job stops: "
                f"nothing more can be recorded)" + (f" - {rest}" if rest else ""))

    def _being_removed(self, message: str, wait: float = 1.0) -> bool:
        """Whether a file of this run folder not found means the folder is going: a removal
        still under way (its config.json not yet reached) is seen within ``wait`` seconds."""
        if f"No such file or directory: '{self.run_dir}" not in str(message):
            return False
        deadline = time.monotonic() + wait
        while (self.run_dir / "config.json").is_file():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def _end_as_live(self, left: float | None) -> None:
        """This object's job lost its run folder while it ran, and nothing of its end can be
        read: end it as the object that runs it in this process ends (its runner's watch
        says how: round 45, a second Job object of a thread job, ``Job(folder)``, waited
        for ever), else as a job seen from elsewhere (:meth:`_watch_foreign`)."""
        with _LIVE_LOCK:
            live = _LIVE.get(self.id)
        if live is not None and live is not self and live.runner is not None:
            live._done.wait(FOLDER_END_WAIT if left is None else min(left, FOLDER_END_WAIT))
            if live.refresh().final:
                self.end_unrecorded(live.status, live.error or "")
                return
        self.end_unrecorded("failed", self.lost_note(
            f"seen from process {os.getpid()}, which can read no more of it"))

    def end_unrecorded(self, status: str, message: str) -> None:
        """Show the job ended (``status``, ``message``) in this process, writing nothing: its
        final event is missing, or could not be written (its run folder removed while it
        ran, a full or read-only disk), and whoever follows it here must not wait forever.
        A final status already read wins. It ended when it was last heard of (its events
        file last written): a job whose kernel was killed at 17 s showed "7 min 57 s" in
        a listing 8 minutes later, and more in each later one."""
        try:
            heard = min(time.time(), os.stat(self.run_dir / "events.jsonl").st_mtime)
        except OSError:  # its run folder removed: now is all that is known
            heard = time.time()
        with self._state_lock:
            self.refresh_locked()
            if not self._state.final:
                ended = max(heard, self._state.started or heard)
                self._state.apply({"t": ended, "type": "status", "status": status,
                                   "rank": -1, "message": message, "inferred": True})
        self._done.set()

    # state -------------------------------------------------------------------------------
    def emit(self, type: str, **fields) -> None:
        """Append an event from the notebook side (status changes, launcher errors)."""
        EventWriter(self.run_dir / "events.jsonl", rank=-1).write(type, **fields)

    def refresh(self) -> JobState:
        """Read new events and return the current state."""
        with self._state_lock:
            return self.refresh_locked()

    def refresh_locked(self) -> JobState:
        for event in self._reader.read():
            self._state.apply(event)
        if self._state.info.get("progress_split"):  # ranks that share the work: all counted
            from .split import whole_progress

            whole_progress(self._state, self.run_dir, int(self.meta.get("np", 1) or 1))
        if self._state.final:
            self._done.set()
        return self._state

    # value -------------------------------------------------------------------------------
    @property
    def value(self):
        """What the job returned (a training's model: ``job.value.model``), for a job run in
        this process, once it has ended; None for a job that failed, was cancelled or ran in
        another process. While the job runs it raises :class:`JobNotDone`, saying so, rather
        than waiting (a notebook's cell would hang without a word): ``job.wait().value``
        waits for it, as ``concurrent.futures``' ``result()`` does."""
        if self._value is not None:
            return self._value
        state = self.refresh()
        if not state.final:
            where = "" if self.runner is not None else (
                "; it runs in another process: its value is not kept here (job.result "
                "holds its summary once done)")
            raise JobNotDone(
                f"job {self.id} is still {state.status}: its value comes at its end; "
                f"job.wait().value waits for it (job.wait(timeout=S) for at most S "
                f"seconds){where}")
        return None

    @value.setter
    def value(self, value) -> None:
        self._value = value

    # trust -------------------------------------------------------------------------------
    @property
    def trust(self) -> str:
        """``"trusted"`` (its code is signed with this user's key), ``"unsigned"`` or
        ``"altered"``: see :mod:`skiff.jobs.trust`."""
        return verdict(self.meta)

    def check_trusted(self, what: str) -> None:
        """Raise :class:`~skiff.jobs.trust.UntrustedJob` (one line saying how to trust it)
        unless this job's code is signed with this user's key. The folder is read again (it
        may have changed since this object read it), and what was checked is what this
        object then holds."""
        meta = read_meta(self.run_dir)
        check_trust(meta, self.run_dir, what)
        self.meta, self.config = meta, meta.get("config", {})

    def sign(self) -> None:
        """Trust this folder's code on purpose: sign it with this user's key."""
        meta = read_meta(self.run_dir)
        write_json(self.run_dir / "config.json", sign(meta))
        self.meta = read_meta(self.run_dir)

    @property
    def state(self) -> JobState:
        return self.refresh()

    @property
    def status(self) -> str:
        return self.refresh().status

    @property
    def done(self) -> bool:
        return self.refresh().final

    @property
    def progress(self) -> float | None:
        """The work done as a fraction (0 to 1, as ``jobs ls --json``'s ``progress``), None
        while the job has said no total (round 38: ``job.progress`` was an AttributeError
        beside ``job.status``)."""
        return _fraction(self.refresh())

    @property
    def error(self) -> str | None:
        state = self.refresh()
        if state.error and state.traceback:
            return f"{state.error}\n\n{state.traceback}"
        return state.error

    @property
    def failures(self) -> list[str]:
        """What failed in a job that ran to its end (``done``), as its kind tells it: a solve
        that did not converge, the images OCR could not read; [] otherwise. The terminal
        exits 1 on them; the job's view and repr show them."""
        if self.refresh().status != "done":
            return []
        from skiff.kinds import KINDS

        kind = KINDS.get(self.kind)
        try:
            return [str(f) for f in kind.failures(self)] if kind is not None else []
        except Exception:  # noqa: BLE001 - a damaged result.json: nothing to say
            return []

    @property
    def result(self) -> dict | None:
        """The JSON summary of the result (``result.json``), once written (an object; anything
        else there is not a result). Paths into run folders that were copied or moved since
        name them where they are now (:func:`skiff.jobs.moved.rebased`)."""
        try:
            text = (self.run_dir / "result.json").read_text()
            value = json.loads(text)
        except (FileNotFoundError, ValueError):  # not there (yet), or not JSON
            return None
        if not isinstance(value, dict):
            return None
        from .moved import rebased

        return rebased(value, self.run_dir, text)

    def events(self) -> list[dict]:
        return EventReader(self.run_dir / "events.jsonl").read()

    def artifact_path(self, name: str) -> Path | None:
        for art in reversed(self.refresh().artifacts):
            if art.get("name") == name:
                return self.run_dir / art["path"]
        return None

    def read_metrics(self) -> None:
        """Make a listing's snapshot (``metrics=False``) whole: its events are read again,
        metrics included (``job.metrics``, ``job.plot()`` and a job view ask for it; a
        ``%jobs`` list holds snapshots, which read their metrics once asked)."""
        if self.metrics_read:
            return
        with self._state_lock:
            if self.metrics_read:
                return
            self._reader = EventReader(self.run_dir / "events.jsonl")
            self._state = JobState()
            self.metrics_read = self.last_points = True
            final = self.refresh_locked().final
        if not final:  # its owner gone: shown ended again, as the snapshot showed it
            pid = self._owner_pid()
            if not self._owner_alive(pid) and not self._starting():
                self._mark_lost(pid)

    @property
    def metrics(self) -> dict[str, list[tuple[int | None, float]]]:
        """Every metric the job reported, in order: ``{name: [(step, value), ...]}`` (step
        None where the job gave none). ``pandas.DataFrame(job.metrics["loss"],
        columns=["step", "loss"])`` makes a table of one."""
        self.read_metrics()
        with self._state_lock:
            state = self.refresh_locked()
            return {name: [(s, v) for s, v, _t in series]
                    for name, series in state.metrics.items()}

    @property
    def logs(self):
        """The job's log (every line, not only the view's tail), then what each rank of a
        process job printed: text that shows as itself (``print(job.logs)`` alike)."""
        from .render import JobLogs, logs_text

        return JobLogs(logs_text(self))

    def plot(self, *names: str, width: float = 6.0, height: float = 2.2, dpi: int = 100):
        """The job's metrics as a matplotlib figure (the job view's charts: one per group of
        metrics, ``loss`` with ``val_loss``, a residual on a log scale). ``names`` picks
        metrics (default: all); a notebook shows the figure, ``fig.savefig(path)`` writes
        it. Raises ValueError when there is nothing to draw (no metric with two points)."""
        from .chart import metric_figure
        from .series import with_history

        self.read_metrics()
        with self._state_lock:
            state = self.refresh_locked()
            metrics, final = {k: list(v) for k, v in state.metrics.items()}, state.final
        if final:  # the result's whole history where the events sampled (round 44)
            metrics = with_history(metrics, self.result)
        unknown = [n for n in names if n not in metrics]
        if unknown:
            from skiff.grammar.common import unknown_name

            if not metrics:
                raise ValueError(f"job {self.id} reported no metrics (status {self.status})")
            raise unknown_name("metric", unknown[0], list(metrics))
        chosen = {n: metrics[n] for n in (names or metrics)}
        fig = metric_figure(chosen, width=width, height=height, dpi=dpi,
                            max_charts=len(chosen) or 1, figure_class=_figure_class())
        if fig is None:
            counts = ", ".join(f"{n}: {len(v)}" for n, v in chosen.items()) or "none"
            hint = "" if self.refresh().final else (
                f"; it is {self.status}: its charts come with its steps (job.wait() waits "
                f"for its end, %jobs show {self.id} -f follows it live)")
            raise ValueError(f"job {self.id} has no metric with two points or more to plot "
                             f"(points per metric: {counts}){hint}")
        from skiff.kernels.backend.figures import DRAW_LOCK

        with DRAW_LOCK:  # laid out now, so that fig.savefig(path) does not overlap titles
            fig.tight_layout()
        return fig

    def add_done_callback(self, fn) -> None:
        """Call ``fn(job)`` once the job has ended (at once if it already has). Runs on the
        runner's thread; exceptions are logged to the run folder, never raised."""
        self._callbacks.append(fn)
        if self._callbacks_fired:
            self.notify_done()

    def notify_done(self) -> None:
        """Call the done callbacks (the runner does, once the job has ended), after giving
        every file in the run folder the permissions of the model (store.apply_mode)."""
        apply_mode(self.run_dir)
        self._callbacks_fired = True
        callbacks, self._callbacks = self._callbacks, []
        self._callbacks_thread = threading.current_thread()
        try:
            for fn in callbacks:
                try:
                    fn(self)
                except Exception as exc:  # a callback must not break the runner
                    self.emit("log", level="error",
                              message=f"done callback {fn!r} failed: {exc}")
        finally:
            self._callbacks_ran.set()

    # control -----------------------------------------------------------------------------
    def wait(self, timeout: float | None = None, *, raise_on_error: bool = False,
             poll: float = 0.1) -> Job:
        """Block until the job ends (or ``timeout`` seconds pass); returns the job."""
        if not self.metrics_read:  # a listed snapshot waited for: followed as a loaded job
            self.read_metrics()  # (its owner watched: one that dies ends the wait)
            self._reattach()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.refresh().final:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"job {self.id} still {self.status} after {timeout} s")
            if self.runner is None and not (self.run_dir / "config.json").is_file():
                self._end_as_live(left)  # its run folder removed: nothing more to read
                continue
            self._done.wait(poll if left is None else min(poll, left))
        if self.runner is not None:
            # the runner calls the done callbacks (a view's last update, its chart drawn)
            # after the final status: wait for them too, so that what they send reaches the
            # cell that waits (nbclient keeps a notebook's widget state only until its last
            # cell ends). Bounded: by what is left of ``timeout``, else CALLBACK_WAIT seconds.
            end = time.monotonic() + CALLBACK_WAIT if deadline is None else deadline
            self.runner.join(self, timeout=max(0.0, end - time.monotonic()))
            if threading.current_thread() is not self._callbacks_thread:  # not from one
                self._callbacks_ran.wait(max(0.0, end - time.monotonic()))
        for hook in list(_WAIT_HOOKS):
            try:
                hook(self)
            except Exception as exc:  # a display hook must not fail the wait
                self.emit("log", level="warning", message=f"wait hook {hook!r} failed: {exc}")
        if raise_on_error and self.status == "failed":
            raise JobFailed(f"job {self.id} failed: {self.refresh().error}")
        return self

    def cancel(self, *, grace: float = 5.0) -> bool:
        """Ask the job to stop at its next step boundary; escalate after ``grace`` seconds.
        Returns whether it asked: False when the job had already ended (nothing done)."""
        if self.refresh().final:
            return False
        (self.run_dir / "cancel").touch()
        self.emit("log", level="warning", message="cancel requested")
        if self.runner is not None:
            self.runner.cancel(self, grace=grace)
        elif self.meta.get("runner") == "process":
            why = identity_mismatch(self._process_record())
            if why is not None:
                self.emit("log", level="warning", message=f"not signalled: {why}")
                raise NotJobProcess(f"job {self.id}: asked to stop (cancel file written) but not "
                                    f"signalled: {why}")
            # a detached reaper owns the escalation: this process (a terminal's
            # `skiff jobs cancel ID`) may exit at once
            from .holders import start_reaper

            start_reaper(self, grace)
        elif self.meta.get("runner") == "slurm" and self.refresh().status == "queued":
            # Slurm has not started it and nothing here runs it: its end is written here (a
            # worker that starts later reads the cancel file and stops)
            queued = read_json(self.run_dir / "slurm.json", {}).get("job_id")
            self.emit("status", status="cancelled", message=(
                f"cancelled before Slurm started it (scancel {queued} takes it off Slurm's "
                f"queue)" if queued else "cancelled before it was submitted to Slurm"))
        return True

    # display -----------------------------------------------------------------------------
    def summary(self) -> dict:
        state = self.refresh()
        now = time.time()
        return {
            "id": self.id,
            "kind": self.kind,
            "status": state.status,
            "runner": self.meta.get("runner"),
            "ranks": self.meta.get("np", 1),
            "device": self.meta.get("device"),
            "progress": _fraction(state),
            # the units done and in all, and the ETA and quiet time the terminal's line
            # shows, for a script that polls `jobs show ID --json` (round 45: only the
            # fraction was there)
            "done": state.done if state.total or state.done else None,
            "total": state.total,
            "unit": state.unit,
            "eta_s": _eta_of(state, now),
            "quiet_s": None if (quiet := state.stalled(now)) is None else round(quiet, 1),
            "elapsed_s": None if state.started is None else
            round(state.elapsed(now) or 0.0, 3),
            "error": state.error,
            "run_dir": str(self.run_dir),
            "trust": self.trust,
            "name": self.meta.get("name"),
            "created": self.meta.get("created"),
            "command": self.meta.get("command") or self.meta.get("label"),
            "damaged": None,  # the same fields as a DamagedJob's, for --json readers
        }

    def __repr__(self) -> str:
        s = self.summary()
        pct = "" if s["progress"] is None else f" {100 * s['progress']:.0f}%"
        err = ""
        if s["error"]:  # its first line, cut (job.error has all of it)
            first = s["error"].splitlines()[0] if s["error"].strip() else s["error"]
            err = f" error={_cut(first, REPR_ERROR)!r}"
        elif s["status"] == "done" and (failed := self.failures):
            more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
            err = f" failed={_cut(failed[0], REPR_ERROR)!r}{more}"
        from .render import plain

        return plain(f"<Job {self.id} {self.kind} {s['status']}{pct}{err}>", newlines=False)

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))

    def _repr_html_(self) -> str:
        from .render import job_html

        return job_html(self)


_FIGURE_CLASS = None


def _figure_class():
    """A matplotlib ``Figure`` that shows itself in a notebook as a PNG (a bare ``Figure``
    made without pyplot shows only ``<Figure size ...>``)."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        from matplotlib.figure import Figure

        from skiff.kernels.backend.figures import render_png

        class JobFigure(Figure):
            def _repr_png_(self):
                return render_png(self)

        _FIGURE_CLASS = JobFigure
    return _FIGURE_CLASS


class DamagedJob:
    """A run folder whose config.json cannot be read or makes no sense: listed, never run.

    Quacks like a :class:`Job` for views (``id``, ``kind``, ``status``, ``summary()``)."""

    status = "damaged"
    kind = "?"
    done = True
    progress = None

    def __init__(self, run_dir: str | Path, reason: str):
        self.run_dir = Path(run_dir)
        self.id = self.run_dir.name
        self.reason = str(reason)
        self.meta: dict = {}
        self.error = f"damaged run folder: {self.reason}"

    def refresh(self) -> JobState:
        return JobState(status="damaged", error=self.error)

    def summary(self) -> dict:
        return {"id": self.id, "kind": self.kind, "status": self.status, "runner": None,
                "ranks": None, "device": None, "progress": None, "done": None, "total": None,
                "unit": None, "eta_s": None, "quiet_s": None, "elapsed_s": None,
                "error": self.error, "run_dir": str(self.run_dir), "damaged": self.reason,
                "trust": None, "name": None, "created": None, "command": None}

    def __repr__(self) -> str:
        return f"<DamagedJob {self.id}: {self.reason}>"

    def _repr_html_(self) -> str:
        return (f"<div class='skiff-job skiff-damaged'><code>{html.escape(self.id)}</code> "
                f"<b>damaged</b>: {html.escape(self.reason)}</div>")


def is_final(status: str) -> bool:
    return status in FINAL


def escape(text) -> str:
    return html.escape(str(text))


def load_or_damaged(run_dir, root=None, *, metrics: bool = True) -> Job | DamagedJob:
    """The job in ``run_dir``, or a :class:`DamagedJob` saying why it cannot be read
    (``metrics``: :meth:`Job.load`)."""
    try:
        return Job.load(run_dir, root, metrics=metrics)
    except DamagedRunFolder as exc:
        return DamagedJob(run_dir, str(exc).split(": ", 1)[-1])
    except PermissionError:
        return DamagedJob(run_dir, "permission denied (not readable by this user)")
    except OSError as exc:
        return DamagedJob(run_dir, f"cannot be read: {exc.strerror or exc}")

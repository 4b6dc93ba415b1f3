"""The MPI worker: ``mpiexec -n N python -m skiff.jobs.worker RUN_DIR``.

Every rank runs the job's entry point with a reporter; rank 0 writes the events and the
result. A rank that raises writes its traceback and aborts the world, so no rank hangs in a
collective waiting for it.

Before anything of the folder is run, every rank checks that its code (kind, entry point and
config) carries this user's signature (:mod:`skiff.jobs.trust`), and refuses it otherwise.
Every file a rank writes gets the run folders' permissions (the umask is set from
``SKIFF_RUNS_MODE``).
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from pathlib import Path

from skiff.kernels.backend.launch_env import check_launch, launch_env


def _record_deaths(run_dir: Path, rank: int) -> None:
    """A crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) leaves its report and traceback in
    ``logs/fault-rank<r>.txt`` for the launcher's message. Terminating signals keep their
    default action (a rank blocked in MPI must still die at once); SIGKILL leaves nothing,
    which is how the launcher recognises it."""
    import faulthandler

    fault = open(run_dir / "logs" / f"fault-rank{rank}.txt", "w")  # noqa: SIM115 (kept open)
    faulthandler.enable(file=fault)


class _Tee:
    """A text stream that writes to ``stream`` and, line-buffered, to a file."""

    def __init__(self, stream, fh):
        self._stream, self._fh = stream, fh

    def write(self, text):
        try:
            self._fh.write(text)
        except (OSError, ValueError):
            pass
        return self._stream.write(text)

    def flush(self):
        try:
            self._fh.flush()
        except (OSError, ValueError):
            pass
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _tee_output(run_dir: Path, rank: int) -> None:
    """What this rank prints (stdout and stderr, from Python) also goes to
    ``logs/rank<r>.out``, so each rank's last lines can be shown apart (mpiexec mixes the
    ranks' output in ``logs/launcher.log``)."""
    try:
        fh = open(run_dir / "logs" / f"rank{rank}.out", "a", buffering=1,  # noqa: SIM115
                  errors="replace")
    except OSError:
        return
    sys.stdout = _Tee(sys.stdout, fh)
    sys.stderr = _Tee(sys.stderr, fh)


# seconds a rank may run on once its peers have ended and the job's final status is written
# (the launcher's watch likewise: skiff/jobs/process.py); SKIFF_FINAL_GRACE_S: a test's
FINAL_GRACE_S = float(os.environ.get("SKIFF_FINAL_GRACE_S") or 30.0)


def _job_ended(run_dir: Path, tail: int = 65536) -> bool:
    """The job's final status is in its events (read from the file's last ``tail`` bytes:
    the final status is among its last events)."""
    import json

    from .events import FINAL

    try:
        with open(run_dir / "events.jsonl", "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - tail))
            lines = fh.read().splitlines()
    except OSError:
        return False
    for line in reversed(lines):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "status" \
                and event.get("status") in FINAL:
            return True
    return False


def _watch_peers(ranks: Path, rank: int, size: int, period: float = 0.5) -> None:
    """Leave when a peer rank on this machine dies without its clean-exit marker.

    The launcher runs mpiexec without its automatic clean-up (so that it can tell which rank
    died first); this watchdog makes sure no rank is left blocked in a collective when no
    launcher is watching (its kernel gone). Peers on other machines are not checked here:
    srun's --kill-on-bad-exit covers those."""
    import socket
    import threading
    import time

    from .store import pid_alive

    host = socket.gethostname()
    (ranks / f"{rank}.host").write_text(host)
    local: dict[int, int] = {}  # peer -> pid on this host, read once (round 37: the folder
    # may go while a peer dies; re-reading it each look then watched nobody)

    alone = None  # since when every peer has left with its exit marker

    def watch():
        nonlocal alone
        while True:
            time.sleep(period)
            if all((ranks / f"{p}.exit").exists() for p in range(size) if p != rank):
                # every peer ended cleanly and the job's end is written: this rank is left
                # in a collective (round 45: a rank that read the stop a step late, its
                # launcher gone, spun in an all-reduce for ever, mpiexec with it)
                alone = time.monotonic() if alone is None else alone
                if time.monotonic() - alone >= FINAL_GRACE_S and _job_ended(ranks.parent):
                    sys.stderr.write(f"skiff worker rank {rank}: every peer has ended and so "
                                     f"has the job; leaving\n")
                    (ranks / f"{rank}.left").write_text("ended")
                    os._exit(70)
                continue
            for peer in range(size):
                if peer == rank or (ranks / f"{peer}.exit").exists():
                    continue
                if peer not in local:
                    try:
                        pid = int((ranks / f"{peer}.pid").read_text())
                        if (ranks / f"{peer}.host").read_text() != host:
                            continue
                    except (OSError, ValueError):
                        continue
                    local[peer] = pid
                pid = local[peer]
                if not pid_alive(pid) and not (ranks / f"{peer}.exit").exists():
                    sys.stderr.write(f"skiff worker rank {rank}: rank {peer} (pid {pid}) died; "
                                     "leaving\n")
                    (ranks / f"{rank}.left").write_text(str(peer))   # a follower, not the cause
                    os._exit(70)

    threading.Thread(target=watch, daemon=True, name="skiff-peer-watchdog").start()


FOLDER_GONE = 72  # the exit status of a rank whose run folder went away


def _watch_folder(run_dir: Path, rank: int, period: float = 0.5) -> threading.Event:
    """Leave when the run folder is gone: removed (a test's temporary folder deleted, an
    ``rm -rf`` of the runs folder) or moved away, the same path now another folder or none.
    Nothing of the job can be written or read back any more, and the launcher's watcher and
    the peers' watchdogs look in that folder: a rank busy in a long computation or blocked
    in a collective ran on unseen (round 37: an orphan rank spun beside CI for 25 minutes).
    Every rank looks for itself (the ranks leave together); the returned event ends the
    watch (``main`` sets it on its way out, so a process that called ``main`` lives on)."""
    import errno

    done = threading.Event()
    run_dir = Path(os.path.abspath(run_dir))  # the same folder whatever the cwd becomes
    try:
        first = os.stat(run_dir)
    except OSError:
        return done
    ident = (first.st_dev, first.st_ino)

    def gone() -> bool:
        try:
            now = os.stat(run_dir)
        except OSError as exc:
            return exc.errno in (errno.ENOENT, errno.ENOTDIR)
        return (now.st_dev, now.st_ino) != ident

    def watch():
        while not done.wait(period):
            if gone() and not done.is_set():
                sys.stderr.write(f"skiff worker rank {rank}: the run folder {run_dir} is gone "
                                 "(removed or moved away): leaving, nothing of the job can "
                                 "be written any more\n")
                sys.stderr.flush()
                os._exit(FOLDER_GONE)

    threading.Thread(target=watch, daemon=True, name="skiff-folder-watchdog").start()
    return done


def _refuse(run_dir: Path, message: str) -> int:
    """Run nothing: say why in the job's events (rank 0) and on stderr; exit 3."""
    sys.stderr.write(f"skiff worker: {message}\n")
    if launch_env().rank == 0 and (run_dir / "events.jsonl").is_file():
        from .events import EventWriter

        writer = EventWriter(run_dir / "events.jsonl", rank=0)
        writer.write("error", message=message, traceback=None)
        writer.write("status", status="failed", message=message)
    return 3
# set when the job is stopped because nobody holds it: the rank then leaves without
# MPI_Finalize, which would wait for peers that may stop at another step or not at all
ORPHANED = threading.Event()
ORPHAN_MESSAGE = ("the launcher is gone and no watcher holds the job: stopping (launch from "
                  "a process that stays, or follow the job)")


def _watch_holders(run_dir: Path, rank: int, period: float = 0.5, grace: float = 5.0) -> None:
    """Stop when nobody holds the job: its launcher gone (killed, its terminal closed) and
    no watcher or detached holder left (``holders/`` in the run folder, see
    :mod:`skiff.jobs.holders`). Two looks a period apart must agree; then the job is asked to
    stop (``cancel``, as a user would) and, ``grace`` seconds later, every rank leaves."""
    import time

    from .holders import live_holders

    def watch():
        unheld = 0
        while True:
            time.sleep(period)
            unheld = 0 if live_holders(run_dir) else unheld + 1
            if unheld < 2:
                continue
            message = ORPHAN_MESSAGE
            ORPHANED.set()
            if rank == 0:
                from .events import EventWriter

                EventWriter(run_dir / "events.jsonl", rank=0).write(
                    "log", level="warning", message=message)
                (run_dir / "cancel").touch()
            time.sleep(grace)
            sys.stderr.write(f"skiff worker rank {rank}: {message}\n")
            if rank == 0:
                from .events import EventWriter

                EventWriter(run_dir / "events.jsonl", rank=0).write(
                    "status", status="cancelled", message=message)
            os._exit(71)   # no exit marker: the peers' watchdogs see this rank go

    threading.Thread(target=watch, daemon=True, name="skiff-holder-watchdog").start()


STOP_NOTE = {
    "term": "SIGTERM: stopping, as on a cancel ({kept}; a second SIGTERM ends the rank at "
            "once)",
    "parent": "the rank's launcher (pid {parent}, mpiexec's proxy) is gone: stopping, as on "
              "a cancel ({kept}; jobs resume ID goes on)",
}




# how long a SIGTERM'd rank of several waits for its kind to take the stop (the run
# folder's cancel, read by rank 0 and agreed on) before it raises where it stands
# (SKIFF_DEFER_S: a test's shorter wait, as the ranks are launched processes)
DEFER_S = float(os.environ.get("SKIFF_DEFER_S") or 10.0)


class _Stops:
    """SIGTERM and a launcher that is gone stop every kind as a cancel does (round 33; the
    train kind alone did, round 32). The run folder's ``cancel`` is written, which every
    rank's reporter reads: a kind that asks ``reporter.should_stop()`` (training steps, a
    generation's tokens, a flow's time steps, a parallel solve's iterations) stops at its
    next look, so it ends as it does on a cancel (a checkpoint written, what was done
    kept). A kind that has not asked yet (OCR, a direct solve, a model still loading) gets
    :class:`JobCancelled` raised in its main thread at once; what it wrote is kept (OCR's
    ``results.jsonl`` is flushed per page). Before, the rank died of the signal, said
    "killed by signal 9 (inferred)". A second SIGTERM ends the rank at once, as before."""

    def __init__(self, run_dir: Path, reporter, parent: int, rank: int = 0, size: int = 1):
        self.run_dir, self.reporter, self.parent = run_dir, reporter, parent
        self.rank, self.size = rank, size
        self.asked = threading.Event()      # the kind has called reporter.should_stop()
        self.stopping: str | None = None    # why, once asked to stop
        self.raised = False                 # JobCancelled raised into the kind's code
        self.pending: str | None = None     # its note, for the worker to write
        self.before = None
        self.watch = None
        self.deferred = False               # a rank of several: the stop left to the kind
        self.over = threading.Event()       # the kind's run has ended
        asks = reporter.should_stop

        def should_stop():
            self.asked.set()
            return asks()

        reporter.should_stop = should_stop

    def start(self) -> None:
        import signal

        if threading.current_thread() is threading.main_thread():
            self.before = signal.getsignal(signal.SIGTERM)
            if self.before in (signal.SIG_DFL, None):
                signal.signal(signal.SIGTERM, self._on_term)
        from skiff.kernels.train.parallel.launcher_watch import watch_parent

        self.watch = watch_parent(self._gone, parent=self.parent)

    def end(self) -> None:
        import signal

        self.over.set()
        if self.watch is not None:
            self.watch.set()
        if self.before in (signal.SIG_DFL, None) and \
                threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def _kept(self) -> str:
        return ("at its next step, a training's checkpoint written" if self.asked.is_set()
                else "at the step its ranks agree on" if self.deferred
                else "now") + "; what it did is kept"

    def _note(self, text: str) -> None:
        try:
            self.reporter.log(text, level="warning")
        except Exception:  # noqa: BLE001 - the stop matters more than its note
            pass

    def _ask(self, why: str) -> bool:
        """Ask for the stop; whether this is the first ask."""
        if self.stopping is not None:
            return False
        self.stopping = why
        cancel = self.run_dir / "cancel"
        try:  # why and which rank, for rank 0's status (a cancel asked before: it is that)
            if not cancel.exists():
                with open(cancel, "a") as fh:
                    fh.write(f"{why} {self.rank}\n")
        except OSError:
            pass
        return True

    def why(self) -> str | None:
        """The status message of a stop this job's ranks asked for (SIGTERM, a launcher
        gone), read from the run folder's ``cancel``; None for a user's cancel."""
        from .signals import stopped_why

        return stopped_why(self.run_dir, self.size)

    def _on_term(self, signum, frame) -> None:
        import signal

        from .reporter import JobCancelled

        first = self._ask("term")
        note = STOP_NOTE["term"].format(kept=self._kept()) \
            if first or self.stopping == "term" else None
        if not self.asked.is_set() and self.size > 1 and not self.deferred:
            # one rank of several, whose kind has not asked yet (a solve's rank 1: rank 0
            # reads the cancel and tells the ranks; a training in its set-up): raised here,
            # it left its peers in a collective, and the launcher ended them all, the
            # solve's iterate lost (round 44). The cancel just written is the stop; raised
            # only if the kind has not taken it in DEFER_S (or at a second SIGTERM)
            self.deferred = True
            note = STOP_NOTE["term"].format(kept=self._kept()) if note else None
            threading.Thread(target=self._defer, args=(note,), daemon=True).start()
            return
        if self.deferred:  # said when it was deferred
            note = None
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM: at once
        if not self.asked.is_set():
            self.raised = True
            self.pending = note  # written by the worker before the status, in order
            from .signals import STOPPED

            raise JobCancelled(STOPPED[self.stopping])
        if note:  # not written from the handler: it may have cut into a write of the log
            threading.Thread(target=self._note, args=(note,), daemon=True).start()

    def _defer(self, note: str | None) -> None:
        import _thread
        import signal

        if note:
            self._note(note)
        self.over.wait(DEFER_S)
        if not self.over.is_set() and not self.asked.is_set():
            # JobCancelled in the main thread, where the handler is still this one (no
            # signal sent: one after the run's end would meet the default handler)
            _thread.interrupt_main(signal.SIGTERM)

    def _gone(self, parent: int) -> None:
        import signal

        if not self._ask("parent"):
            return
        self._note(STOP_NOTE["parent"].format(parent=parent, kept=self._kept()))
        if not self.asked.is_set() and signal.getsignal(signal.SIGTERM) == self._on_term:
            os.kill(os.getpid(), signal.SIGTERM)  # JobCancelled in the main thread


PARTIAL_FILE = "partial.npz"


def keep_partial(run_dir: Path, exc: BaseException, reporter, why: str) -> list[str]:
    """Keep what a kind had done when it was stopped by a raised :class:`JobCancelled`
    (round 34): the kind attaches it to the exception, ``exc.partial`` (a value with
    ``to_json()`` or a dict: written as ``result.json`` with ``"stopped": why``; a
    generation's text so far) and ``exc.arrays`` (``{name: array}``: written as
    ``partial.npz`` in the run folder, named in its artifacts; a solve's last iterate, for
    a warm start). A kind that returns its value when ``reporter.should_stop()`` needs none
    of this: its value is written as on a normal end. What is written, by name; a partial
    that cannot be written is said in the log, and the cancel goes on."""
    written = []
    partial, arrays = getattr(exc, "partial", None), getattr(exc, "arrays", None)
    try:
        if partial is not None:
            from .store import write_json

            doc = partial.to_json() if hasattr(partial, "to_json") else partial
            doc = dict(doc) if isinstance(doc, dict) else {"value": doc}
            doc.setdefault("stopped", why)
            write_json(run_dir / "result.json", doc, long_values_on_one_line=True)
            written.append("result.json")
        if isinstance(arrays, dict) and arrays:
            import numpy as np

            path = run_dir / PARTIAL_FILE
            tmp = path.with_name(f".{PARTIAL_FILE}.tmp")
            with open(tmp, "wb") as fh:
                np.savez(fh, **{str(k): np.asarray(v) for k, v in arrays.items()})
            tmp.replace(path)
            reporter.artifact("what was done before the stop", path, kind="file")
            written.append(PARTIAL_FILE)
    except Exception as err:  # noqa: BLE001 - the cancel matters more than what it kept
        reporter.log(f"what was done before the stop could not be kept "
                     f"({type(err).__name__}: {err})", level="warning")
        return written
    if written:
        reporter.log(f"stopped: kept {' and '.join(written)} (what was done before the stop)")
    return written


def main(argv: list[str] | None = None) -> int:
    launcher = os.getppid()  # first: a launcher killed while this rank starts is seen too
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m skiff.jobs.worker RUN_DIR", file=sys.stderr)
        return 2
    run_dir = Path(argv[0])
    from .store import DamagedRunFolder, dir_mode, read_meta
    from .trust import UntrustedJob, check

    os.umask(0o777 & ~dir_mode())  # private: 0700 folders, 0600 files; group: 0770, 0660
    try:
        meta = read_meta(run_dir)
        check(meta, run_dir, "run")
    except (DamagedRunFolder, UntrustedJob) as exc:
        return _refuse(run_dir, str(exc))
    env = launch_env()
    rank, size = env.rank, env.size
    ranks = run_dir / "ranks"
    ranks.mkdir(exist_ok=True)
    (ranks / f"{rank}.pid").write_text(str(os.getpid()))
    _record_deaths(run_dir, rank)
    _tee_output(run_dir, rank)
    folder_watch = _watch_folder(run_dir, rank)
    if size > 1:
        _watch_peers(ranks, rank, size)
    if os.environ.get("SKIFF_HELD") == "1":   # a local launch: stop when nobody holds it
        _watch_holders(run_dir, rank)

    from .reporter import RunReporter

    reporter = RunReporter(run_dir, rank=rank, world_size=size)
    held = os.environ.get("SKIFF_HELD") == "1"
    stops = _Stops(run_dir, reporter, launcher, rank, size) if held else None
    if stops is not None:  # a local process job: SIGTERM and a gone launcher are a cancel
        stops.start()      # (before "running": a signal from then on is a cancel)
    try:
        return _run(run_dir, meta, reporter, stops, rank, size, ranks)
    finally:  # every way out (a failure, a cancel of one rank of several included): the
        folder_watch.set()  # watches and the SIGTERM handler end with the run
        if stops is not None:  # (round 34: they stayed, in a process that called main())
            stops.end()


def _run(run_dir: Path, meta: dict, reporter, stops, rank: int, size: int, ranks: Path) -> int:
    from skiff.kinds.base import resolve_entry

    from .reporter import JobCancelled, returned_status
    from .store import write_json

    if rank == 0:
        reporter.emit("status", status="running")
    code = 0
    try:
        check_launch()  # the MPI world is the launcher's, or one clear message (not N alone)
        fn = resolve_entry(meta["target"])
        from .secret import unmasked  # secret options: from the environment, not the disk

        value = fn(unmasked(meta.get("config", {})), reporter)
        seen = reporter.stop_seen  # told to stop before it returned (returned_status)
        if stops is not None:  # done: a SIGTERM from here on cuts into nothing
            stops.asked.set()
        reporter.flush()
        if rank == 0:
            summary = value.to_json() if hasattr(value, "to_json") else value
            write_json(run_dir / "result.json", summary if isinstance(summary, dict)
                       else {"value": summary}, long_values_on_one_line=True)
            final = returned_status(reporter, seen)
            # stopped because nobody holds it: said on the status, as a signalled stop is
            # ('cancelled' alone read as a user's cancel; the why was in a log line only)
            why = {"message": ORPHAN_MESSAGE} if final == "cancelled" and ORPHANED.is_set() \
                else {"message": stops.why()} if final == "cancelled" and \
                stops is not None and stops.why() else {}
            reporter.emit("status", status=final, **why)
    except JobCancelled as exc:
        # the last step's held-back progress and samples; every rank's (another rank's
        # progress counts where the ranks share the work: skiff.jobs.split)
        reporter.flush()
        if stops is not None and stops.pending:
            stops._note(stops.pending)
        if rank == 0:
            # stopped because nobody holds it: said so (a solve, which raises at the cancel
            # its watchdog wrote, ended "cancelled by request", no one having asked; round 40)
            why = ORPHAN_MESSAGE if ORPHANED.is_set() else \
                stops.why() if stops is not None else None
            keep_partial(run_dir, exc, reporter, why or str(exc))
            reporter.emit("status", status="cancelled", message=why or str(exc))
        if size > 1 and stops is not None and stops.raised:
            # stopped where it stood, not at a point the ranks agree on: a peer may be
            # blocked in a collective with it. No exit marker: the peers' watchdogs see
            # this rank go and leave too (a marker told them it ended cleanly)
            return 0
    except BaseException as exc:
        tb = traceback.format_exc()
        msg = f"{type(exc).__name__}: {exc}"
        msg = msg if rank == 0 else f"rank {rank}: {msg}"
        code = 1
        try:
            _write_failure(run_dir, reporter, rank, ranks, tb, msg,
                           comm=type(exc).__module__.startswith("mpi4py"))
        except OSError as err:  # the folder gone (the usual cause of the failure then)
            sys.stderr.write(f"{tb}skiff worker rank {rank}: {msg}; the failure could not "
                             f"be written ({type(err).__name__}: {err})\n")
        if size > 1:
            try:
                from mpi4py import MPI

                MPI.COMM_WORLD.Abort(1)
            except Exception:
                pass
        return code
    (ranks / f"{rank}.exit").write_text(str(code))
    return code


def _write_failure(run_dir: Path, reporter, rank: int, ranks: Path, tb: str, msg: str,
                   comm: bool) -> None:
    """A rank's failure in its run folder: its traceback, the events (an MPI error is often
    a symptom, a peer died: ``comm_error``, the launcher may name the cause later) and the
    exit marker."""
    from .events import EventWriter

    (run_dir / "logs" / f"traceback-rank{rank}.txt").write_text(tb)
    try:
        reporter.flush()
    except OSError:
        pass
    writer = EventWriter(run_dir / "events.jsonl", rank=rank)
    writer.write("error", message=msg, traceback=tb, comm_error=comm)
    writer.write("status", status="failed", message=msg)
    (ranks / f"{rank}.exit").write_text("1")


def _unheld() -> bool:
    """Whether this rank ends in a job nobody holds (its own watchdog may not have looked
    yet when a peer's stop reached it): MPI_Finalize could then wait for ranks that left."""
    if ORPHANED.is_set():
        return True
    if os.environ.get("SKIFF_HELD") != "1" or len(sys.argv) != 2:
        return False
    from .holders import live_holders

    return not live_holders(Path(sys.argv[1]))


def _skip_finalize() -> bool:
    """Whether this rank leaves without MPI_Finalize: always when it has peers. Finalize is
    collective: a rank in it waits for every peer's, and a peer that left without it (its
    job unheld, seen a moment earlier than here, or its watchdog's exit) would leave this
    rank and mpiexec waiting for ever. Every collective of the job has completed by now, and
    what the rank wrote is flushed; mpiexec and srun take exit code 0 as a clean end."""
    return _unheld() or launch_env().size > 1


if __name__ == "__main__":
    status = main()
    if _skip_finalize():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)

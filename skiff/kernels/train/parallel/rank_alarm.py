"""When one rank of a training job fails, the other ranks stop too, saying which and why.

The failures the ranks agree on (a non-finite loss, a stop request, early stopping) end every
rank at the same step. Any other exception on one rank (a data-loading error, a batch of the
wrong shape, an out-of-memory, a KeyboardInterrupt, a checkpoint write that fails) used to
leave the other ranks waiting in the next collective for ever: under ``mpiexec -n 2 python
train.py`` the failing rank printed its traceback and then waited in ``MPI_Finalize`` for
peers that waited for it, and nothing ended the job.

:class:`RankAlarm` guards one ``Trainer.train`` call on several ranks. On entry it starts a
watcher thread that polls (``Iprobe``) a duplicate of the world communicator kept for alarms.
An exception leaving the guarded block on one rank is sent to every other rank as one line
(``rank 1 failed after step 3: ValueError: ...``) and noted on the exception itself. A rank that
hears an alarm says so on stderr at once; if its own ``train`` has not ended ``grace``
seconds later (it is blocked in a collective its peer will never join), it leaves the
process with exit code 1, which makes ``mpiexec`` (and the skiff worker's watchdog, and
``srun --kill-on-bad-exit``) end the rest of the job. A rank whose ``train`` ends by itself
within the grace (it raised the same error, or an agreed one) is not touched.

A SIGINT sent to one rank alone (``kill -INT``, Ctrl-C in the terminal of one rank) while
that rank is blocked in a collective used to do nothing: Python runs its handler only when
the MPI call returns, and the call waited for a peer. The signal's wake-up byte
(``signal.set_wakeup_fd``, written by the C handler at once) reaches the watcher thread; if
the main thread has not raised its KeyboardInterrupt ``grace`` seconds later, the watcher
tells the other ranks (``rank 0 was interrupted (SIGINT) ...``) and leaves with exit code
130, as an interrupted process does. A wake-up descriptor set before (an asyncio loop) gets
every byte forwarded and is put back when the block ends.

Every ``train`` call is numbered (the same on every rank, as the calls are collective), and
an alarm carries its number: one left unread from an earlier call is ignored.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time

__all__ = ["RankAlarm", "AbortOnError", "rank_alarm", "threads_allowed", "ALARM_TAG"]

ALARM_TAG = 29_017
POLL_S = 0.25
GRACE_S = 3.0
JOIN_S = 1.0      # how long the block's end waits for the watcher thread
SEND_WAIT_S = 2.0
PARENT_WAIT_S = 2.0  # a spawned rank that failed, before it leaves (spawned.py)

_COMM = None      # the alarm communicator (a duplicate of the world, made once per process)
_PARENT = []      # [the inter-communicator to a parent that spawned the job, or None]
_CALLS = [0]      # train() calls guarded so far in this process


def _alarm_comm():
    global _COMM
    if _COMM is None:
        from mpi4py import MPI

        _COMM = MPI.COMM_WORLD.Dup()   # collective: every rank's first guarded call
    return _COMM


def join_parent_gather(parent, text: str) -> None:
    """Join, in a daemon thread, the gather a parent that spawned this job may be blocked
    in (``inter.gather(None, root=MPI.ROOT)``) with a :class:`.spawn_failure.ParentNotice`
    of ``text``: it raises there instead of waiting until Hydra's clean-up kills the
    parent. A parent in another call never completes it; the thread then stays until the
    rank leaves (needs ``MPI_THREAD_MULTIPLE``; else nothing)."""
    from mpi4py import MPI

    from .spawn_failure import ParentNotice

    if not threads_allowed(MPI):
        return

    def run():
        try:
            parent.gather(ParentNotice(text), root=0)
        except Exception:  # noqa: BLE001 - MPI torn down: nothing more to tell
            pass

    threading.Thread(target=run, daemon=True, name="skiff-parent-notice").start()


def _parent_comm():
    """The inter-communicator to the process that spawned this job (``MPI.COMM_SELF.Spawn``
    from a notebook) or that started it as its own job and joined it through a port
    (:func:`.launched.parent`), or None: a failing rank tells it too (:mod:`.spawned`)."""
    from .launched import connected_parent

    joined = connected_parent()
    if joined is not None:
        return joined
    if not _PARENT:
        try:
            from mpi4py import MPI

            parent = MPI.Comm.Get_parent()
            _PARENT.append(None if parent == MPI.COMM_NULL else parent)
        except Exception:  # noqa: BLE001 - no MPI answer: no parent to tell
            _PARENT.append(None)
    return _PARENT[0]


def rank_alarm(world_size: int, **kw):
    """A :class:`RankAlarm` over the MPI world when the job has several ranks, else a guard
    that does nothing (one process never imports MPI here)."""
    if int(world_size or 1) <= 1:
        return _NoAlarm()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return _NoAlarm()
    comm = _alarm_comm()
    if comm.Get_size() <= 1:
        return _NoAlarm()
    from mpi4py import MPI

    if not threads_allowed(MPI):
        return AbortOnError(comm)
    return RankAlarm(comm, **kw)


def threads_allowed(mpi) -> bool:
    """Whether a second thread may call MPI while the first is in a collective: only under
    ``MPI_THREAD_MULTIPLE`` (mpi4py asks for it by default; a user's ``mpi4py.rc.thread_level
    = "funneled"`` or an MPI built without it gives less, and there a watcher's ``Iprobe``
    beside an all-reduce is undefined behaviour)."""
    try:
        return mpi.Query_thread() >= mpi.THREAD_MULTIPLE
    except Exception:  # noqa: BLE001 - no answer: take the safe path
        return False


class AbortOnError:
    """The guard where no watcher thread may run (:func:`threads_allowed` false): an exception
    on this rank is printed with its traceback and the whole job is aborted
    (``comm.Abort(1)``), as the other ranks could only wait for ever in their next collective.
    Agreed failures (``exc.all_ranks``) leave as they came, on every rank together."""

    where = None

    def __init__(self, comm, *, out=None):
        self.comm = comm
        self.out = out

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or getattr(exc, "all_ranks", False):
            return False
        import traceback

        out = self.out or sys.stderr
        try:
            rank, size = self.comm.Get_rank(), self.comm.Get_size()
            out.write("".join(traceback.format_exception(exc_type, exc, tb)))
            out.write(f"skiff rank {rank}: aborting all {size} ranks (MPI gives this process "
                      "no MPI_THREAD_MULTIPLE, so the others cannot be told and stopped one by "
                      "one)\n")
            out.flush()
        except (OSError, ValueError):
            pass
        self.comm.Abort(1)
        return False


class _NoAlarm:
    where = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class RankAlarm:
    """Guard one collective block (``with RankAlarm(comm): ...``); see the module's doc.

    ``where()``, when set, says where this rank is (``"after step 4"``) for the alarm's text.
    ``leave(code)`` ends the process (``os._exit``; tests pass their own)."""

    def __init__(self, comm, *, grace: float = GRACE_S, out=None, leave=None):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.grace = float(grace)
        self.out = out
        self.leave = leave or os._exit
        self.where = None
        self.heard: str | None = None
        _CALLS[0] += 1
        self.call = _CALLS[0]
        self._done = threading.Event()
        self._wakeup: tuple[int, int] | None = None  # (read, write) ends of the signal pipe
        self._old_wakeup = -1
        # the pipe is closed by whichever of the block's end and the watcher comes last: a
        # watcher that outlived the join (a slow Iprobe on a loaded machine) would otherwise
        # select on / read a descriptor number that a later open() of the process reuses
        self._fd_lock = threading.Lock()
        self._watcher_ended = False
        self._close_later = False
        self.interrupted: float | None = None  # when a SIGINT reached this rank
        self.parent = _parent_comm()  # asked here, in the main thread
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name=f"skiff-rank-alarm-{self.rank}")

    # -- the guarded block ------------------------------------------------------------------
    def __enter__(self):
        self._watch_signals()
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._done.set()
        self._thread.join(timeout=JOIN_S)
        self._unwatch_signals()
        if exc is not None and self.heard is None and not getattr(exc, "all_ranks", False):
            self._raise_alarm(exc)
        return False

    def _say(self, text: str) -> None:
        out = self.out or sys.stderr
        try:
            out.write(text + "\n")
            out.flush()
        except (OSError, ValueError):
            pass

    def _raise_alarm(self, exc: BaseException) -> None:
        """Tell every other rank that this one failed, and say so on the exception."""
        where = ""
        if self.where is not None:
            try:
                where = f" {self.where()}"
            except Exception:  # noqa: BLE001 - the alarm must go out whatever
                where = ""
        cause = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
        if len(cause) > 600:
            cause = cause[:600] + " ..."
        text = f"rank {self.rank} failed{where}: {cause}"
        reqs = []
        for peer in range(self.size):
            if peer == self.rank:
                continue
            try:
                reqs.append(self.comm.isend((self.call, text), dest=peer, tag=ALARM_TAG))
            except Exception:  # noqa: BLE001 - a peer already gone: tell the others
                pass
        told = False
        if self.parent is not None:  # a parent waiting with the ranks (spawned.py) hears it
            try:
                reqs.append(self.parent.isend((self.call, text), dest=0, tag=ALARM_TAG))
                told = True
            except Exception:  # noqa: BLE001
                pass
        self._wait_sent(reqs)
        if told:  # a parent blocked in a bare gather gets the failure from it (spawned.py)
            join_parent_gather(self.parent, text)
        if told:  # give the parent time to end the job's process manager first: this rank
            import traceback  # leaving makes Hydra's clean-up kill the parent too; it may

            self._say("".join(traceback.format_exception(exc)).rstrip())  # end this one
            time.sleep(PARENT_WAIT_S)
        if hasattr(exc, "add_note"):
            exc.add_note(f"(on rank {self.rank} of {self.size}: the other ranks were told to "
                         "stop)")

    @staticmethod
    def _wait_sent(reqs) -> None:
        import time

        end = time.monotonic() + SEND_WAIT_S
        pending = list(reqs)
        while pending and time.monotonic() < end:
            try:
                pending = [r for r in pending if not r.test()[0]]
            except Exception:  # noqa: BLE001
                return
            if pending:
                time.sleep(0.005)

    # -- SIGINT while the main thread is blocked in MPI ----------------------------------------
    def _watch_signals(self) -> None:
        """Have the C signal handler write each signal's number to a pipe the watcher reads
        (only from the main thread, and only while SIGINT has a Python handler)."""
        if threading.current_thread() is not threading.main_thread():
            return
        handler = signal.getsignal(signal.SIGINT)
        if handler in (signal.SIG_IGN, signal.SIG_DFL, None):
            return
        r, w = os.pipe()
        os.set_blocking(w, False)
        try:
            self._old_wakeup = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(r)
            os.close(w)
            return
        self._wakeup = (r, w)

    def _unwatch_signals(self) -> None:
        if self._wakeup is None:
            return
        try:
            signal.set_wakeup_fd(self._old_wakeup)
        except (ValueError, OSError):
            pass
        with self._fd_lock:
            if self._watcher_ended or not self._thread.is_alive():
                self._close_pipe()
            else:  # the watcher still runs (it may be in select on the pipe): it closes it
                self._close_later = True

    def _close_pipe(self) -> None:
        """(with ``_fd_lock`` held) Close the signal pipe once."""
        pipe, self._wakeup = self._wakeup, None
        for fd in pipe or ():
            try:
                os.close(fd)
            except OSError:
                pass

    def _pause(self, seconds: float) -> None:
        """Wait ``seconds`` (or until the block ends), noting a SIGINT that arrives."""
        if self._wakeup is None:
            self._done.wait(seconds)
            return
        r = self._wakeup[0]
        try:
            ready, _, _ = select.select([r], [], [], seconds)
            data = os.read(r, 512) if ready else b""
        except (OSError, ValueError):  # the pipe closed as the block ended
            self._done.wait(seconds)
            return
        if data and self._old_wakeup >= 0:  # an asyncio loop's descriptor: it gets them too
            try:
                os.write(self._old_wakeup, data)
            except OSError:
                pass
        if signal.SIGINT in data and self.interrupted is None:
            self.interrupted = time.monotonic()

    def _leave_if_interrupted(self) -> bool:
        """After a SIGINT the main thread has not acted on for ``grace`` seconds (it is
        blocked in a collective): tell the other ranks and leave (exit code 130)."""
        if self.interrupted is None or time.monotonic() - self.interrupted < self.grace:
            return False
        if self._done.is_set():
            return True
        self._raise_alarm(KeyboardInterrupt("interrupted (SIGINT) while it waited in a "
                                            "collective"))
        self._say(f"skiff rank {self.rank}: interrupted (SIGINT) while it waited in a "
                  "collective; the other ranks were told to stop; leaving the job")
        time.sleep(2 * POLL_S)  # their watchers may say why before the launcher ends them
        self.leave(130)
        return True

    # -- the watcher thread -----------------------------------------------------------------
    def _watch(self) -> None:
        try:
            self._watch_loop()
        finally:
            with self._fd_lock:
                self._watcher_ended = True
                if self._close_later:
                    self._close_pipe()

    def _watch_loop(self) -> None:
        from mpi4py import MPI

        while not self._done.is_set():
            if self._leave_if_interrupted():
                return
            status = MPI.Status()
            try:
                if not self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=ALARM_TAG, status=status):
                    self._pause(POLL_S)
                    continue
                call, text = self.comm.recv(source=status.Get_source(), tag=ALARM_TAG)
            except Exception:  # noqa: BLE001 - MPI torn down under us: nothing to watch
                return
            if call != self.call:  # left unread by an earlier train() call
                continue
            self.heard = text
            self._say(f"skiff rank {self.rank}: stopping: {text}")
            if self.parent is not None:  # a bare gather in the parent needs every rank
                join_parent_gather(self.parent, text)
            if self._done.wait(self.grace):
                return  # this rank's train() ended by itself
            self._say(f"skiff rank {self.rank}: left the job (it waited in a collective that "
                      f"rank {status.Get_source()} will not join)")
            self.leave(1)
            return

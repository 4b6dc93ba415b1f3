"""The parent's side of ranks started with ``MPI.COMM_SELF.Spawn`` (a notebook's way): wait
for them with a bound, and hear when one of them fails.

A parent that waits in a collective with its spawned ranks (``inter.gather(None,
root=MPI.ROOT)``) waited for ever when a rank died before joining it: the ranks' own alarm
(:mod:`.rank_alarm`) ends them, but nothing reaches the parent, and aborting through the
inter-communicator would kill the parent (the notebook's kernel) too. Now a failing rank
also sends its one line to the parent (tag :data:`.rank_alarm.ALARM_TAG`), and
:func:`wait_for_ranks` runs the parent's blocking call in a thread while it listens for that
line: the parent gets :class:`SpawnedRanksFailed` naming the rank, the step and the cause
(``rank 1 failed after step 4: ValueError: ...``) within a poll of the failure, or
``TimeoutError`` after ``timeout`` seconds (a rank killed outright, SIGKILL, sends nothing).

    >>> inter = MPI.COMM_SELF.Spawn(sys.executable, args=["train.py"], maxprocs=2)
    >>> results = gather_from_ranks(inter, timeout=600)   # [None, rank 0's, rank 1's]

A parent that waits with a bare ``inter.gather(None, root=MPI.ROOT)`` (no skiff code runs
in it) was SIGKILLed by Hydra's clean-up with the ranks. The failing rank and the ranks it
alarms now also join that gather with a :class:`ParentNotice` (bounded: a parent in another
call never completes it): unpickled in the parent, it ends the process manager and raises
:class:`SpawnedRanksFailed` out of the bare gather, naming :func:`gather_from_ranks` for a
bound on ranks killed outright (which send nothing).

After a failure the blocked call's thread stays blocked (MPI cannot cancel a collective), so
leave the inter-communicator as it is: ``Disconnect`` would wait for the failed ranks too.
"""

from __future__ import annotations

import threading
import time

from .rank_alarm import ALARM_TAG, threads_allowed
from .spawn_failure import ParentNotice, SpawnedRanksFailed, end_process_manager

__all__ = ["SpawnedRanksFailed", "ParentNotice", "wait_for_ranks", "gather_from_ranks"]

POLL_S = 0.2
# seconds a call is still waited for after the ranks' job ended with exit status 0: a rank
# that sends its part and leaves at once (no MPI_Finalize) can end the job before this
# process has taken what it sent (round 32: 1 in 20 launches at load 10)
DRAIN_S = 10.0


def gather_from_ranks(inter, timeout: float | None = None):
    """``inter.gather(None, root=MPI.ROOT)`` on the parent's inter-communicator, bounded as
    :func:`wait_for_ranks` bounds it: the list of what each rank gathered (rank 0's
    first). Ranks started by :func:`.launched.launch_ranks` are then told that their parts
    are here (:func:`.launched.to_parent` waits for it before the rank may leave)."""
    from mpi4py import MPI

    from .launched import acknowledge, launched_process

    parts = wait_for_ranks(inter, lambda: inter.gather(None, root=MPI.ROOT), timeout=timeout,
                           what="gather")
    if launched_process(inter) is not None:  # ranks in launched.to_parent may leave now
        acknowledge(inter)
    return parts


def wait_for_ranks(inter, call, timeout: float | None = None, *, what: str = "call"):
    """Run ``call()`` (the parent's blocking call with its spawned ranks: a gather, a bcast,
    a recv) and return its value; raise :class:`SpawnedRanksFailed` as soon as a spawned
    rank reports a failure, ``TimeoutError`` after ``timeout`` seconds (None: no bound but
    the ranks' reports)."""
    from mpi4py import MPI

    if inter == MPI.COMM_NULL or not inter.Is_inter():
        raise TypeError("wait_for_ranks needs the inter-communicator MPI.COMM_SELF.Spawn "
                        "returned")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be positive seconds or None, got {timeout!r}")
    if not threads_allowed(MPI):
        raise RuntimeError("waiting with a bound needs MPI_THREAD_MULTIPLE in the parent "
                           "(mpi4py asks for it unless mpi4py.rc.thread_level is set lower)")
    box: dict = {}

    def run():
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="skiff-spawned-wait")
    thread.start()
    end = None if timeout is None else time.monotonic() + float(timeout)
    status = MPI.Status()
    n = inter.Get_remote_size()
    from .launched import launched_process

    job = launched_process(inter)  # ranks started by launch_ranks: their own mpiexec
    ended_at = None  # when their job was first seen ended with exit status 0
    while True:
        thread.join(POLL_S)
        if not thread.is_alive():
            break
        if inter.Iprobe(source=MPI.ANY_SOURCE, tag=ALARM_TAG, status=status):
            _, text = inter.recv(source=status.Get_source(), tag=ALARM_TAG)
            ended = end_process_manager()
            if job is not None:  # launch_ranks' own job: its ranks left or are ended
                from .launched import end_ranks

                end_ranks(job)
            raise SpawnedRanksFailed(
                f"the {n} spawned ranks stopped: {text} (the {what} with them will not "
                "complete" + ("; their process manager was ended, so that it does not end "
                              "this process too: spawn again after restarting" if ended else
                              "; leave the inter-communicator without Disconnect") + ")")
        if job is not None and job.poll() is not None and thread.is_alive() and not \
                inter.Iprobe(source=MPI.ANY_SOURCE, tag=ALARM_TAG):  # a rank's own word first
            code = job.returncode
            if code == 0:  # every rank left cleanly: what they sent may still be on its way
                if ended_at is None:  # (a rank that sends its part and leaves at once ends
                    ended_at = time.monotonic()  # the job before this call has taken it)
                if time.monotonic() - ended_at < DRAIN_S:
                    continue
            raise SpawnedRanksFailed(
                f"the {n} ranks' job ended (mpiexec exit status {code}"
                + (", a rank killed outright, e.g. SIGKILL or the OOM killer" if code in
                   (9, 137, -9) else "") + f") before the {what} with them completed"
                + (f" (nothing more came in {DRAIN_S:g} s: did every rank join it?)" if code
                   == 0 else "") + "; "
                "this process goes on: leave the inter-communicator without Disconnect")
        if end is not None and time.monotonic() > end:
            if job is not None:  # the call stays blocked: nothing more can be asked of them,
                from .launched import _end  # and ranks waiting in it would be left behind

                _end(job)
            raise TimeoutError(
                f"the {n} spawned ranks did not complete the {what} in {timeout:g} s and "
                "none reported a failure (a rank killed outright, e.g. by the OOM killer, "
                "says nothing; a rank that raised and waits in MPI_Finalize too: run ranks "
                "with python -m mpi4py, which aborts on an error)"
                + ("; their job was ended" if job is not None else "") + ": see their output")
    if "error" in box:
        if job is not None and isinstance(box["error"], SpawnedRanksFailed):
            from .launched import end_ranks  # a failing rank's notice completed the call:

            end_ranks(job)  # its peers leave, or are ended (none may be left behind)
        raise box["error"]
    return box.get("value")

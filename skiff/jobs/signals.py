"""Stopping a process job from outside: wait for the cooperative stop, then signal its group.

Used by the process runner (a job it launched) and by a reattached :class:`~skiff.jobs.Job`
(a job launched by another process), so neither has to import the other.

A pid in ``process.json`` is only signalled when the process behind it is still the job's
own: the record must carry this user's signature (:mod:`skiff.jobs.trust`: anyone can read
another process's start time and command line, nobody else can sign them), and the start
time (field 22 of ``/proc/<pid>/stat``) recorded at launch by :func:`process_identity` must
be the process's now (a reused pid is another process; a pid and its start time name one
process for the life of the machine). The command line is recorded too, for the message;
it is not compared, since a launcher may replace its own program (``exec``).
"""

from __future__ import annotations

import os
import signal
import time

from .store import pid_alive, proc_stat, read_json

__all__ = ["escalate_cancel", "kill_group", "process_identity", "identity_mismatch",
           "NotJobProcess", "STOPPED", "stopped_why"]

# why a job's own ranks asked for its stop, as the run folder's ``cancel`` says (its first
# line "term 1": rank 1 was SIGTERM'd; "parent 0": rank 0's launcher went); a user's cancel
# writes nothing there (skiff.jobs.worker._Stops)
STOPPED = {"term": "stopped by SIGTERM", "parent": "stopped: the rank's launcher is gone"}


def stopped_why(run_dir, ranks: int = 2) -> str | None:
    """The status message of a stop the job's ranks asked for (SIGTERM, a launcher gone),
    read from the run folder's ``cancel``, naming the rank where there are several; None
    for a user's cancel or no cancel."""
    try:
        with open(os.path.join(run_dir, "cancel"), encoding="utf-8", errors="replace") as fh:
            first = fh.read(200).split("\n", 1)[0].split()
    except OSError:
        return None
    if len(first) != 2 or first[0] not in STOPPED:
        return None
    return STOPPED[first[0]] + (f" (rank {first[1]})" if ranks > 1 else "")


class NotJobProcess(ValueError):
    """The pid a run folder names is not the job's own process: it is never signalled."""


def process_identity(pid: int) -> dict:
    """``{"start_ticks": ..., "cmdline": [...]}`` of a live process (empty where /proc is
    missing): what :func:`identity_mismatch` compares before signalling it."""
    fields = proc_stat(pid)
    if fields is None:
        return {}
    try:
        for _ in range(50):
            # a child seen just after Popen returns may still be finishing its exec: the
            # command line reads empty for a moment
            with open(f"/proc/{int(pid)}/cmdline", "rb") as fh:
                raw = fh.read()
            if raw:
                break
            time.sleep(0.002)
    except (OSError, ValueError, IndexError):
        return {}
    # after the ")" that ends the command name, field 3 (state) comes first: start time is 22
    return {"start_ticks": int(fields[19]),
            "cmdline": [a.decode(errors="replace") for a in raw.split(b"\0") if a]}


def identity_mismatch(proc: dict) -> str | None:
    """Why the process ``process.json`` names must not be signalled; None if it is the job's.

    A process that is gone needs no signal (None too)."""
    pid = proc.get("pid")
    if not pid_alive(pid):
        return None
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1:
        return f"process.json names pid {pid!r}, which cannot be a job's launcher"
    from .trust import record_verdict

    recorded = {k: proc.get(k) for k in ("start_ticks", "cmdline")}
    if recorded["start_ticks"] is None or recorded["cmdline"] is None:
        return (f"process.json does not record the start time and command line of pid {pid}, "
                "so it cannot be shown to be the job's process")
    state = record_verdict(proc, "process")
    if state != "trusted":
        return (f"process.json (pid {pid}) is {'not signed' if state == 'unsigned' else 'altered'}"
                " by this user's key, so it may name someone else's process")
    now = process_identity(pid)
    if not now:
        return f"pid {pid} cannot be inspected (/proc/{pid} unreadable)"
    if now["start_ticks"] != recorded["start_ticks"]:
        return (f"pid {pid} was started at another time than the job's launcher "
                "(the pid now belongs to another process)")
    return None


# a cancel's escalation waits at most this long past its grace for a job that is still
# finishing its step or writing its end (a checkpoint, its result)
STOPPING_CAP_S = 30.0


def _progress(job) -> list:
    """The job's progress events' times so far ([] where its folder cannot be read)."""
    try:
        return list(job.refresh().progress_times)
    except Exception:  # noqa: BLE001 - a damaged folder: no steps to wait for
        return []


def _step_gap(times: list) -> float:
    """The usual seconds between progress events (0 before two of them)."""
    if len(times) < 2:
        return 0.0
    return max(0.0, (times[-1][0] - times[0][0]) / (len(times) - 1))


def _size(path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def escalate_cancel(job, grace: float = 5.0) -> None:
    """Once the job's mpiexec has run on ``grace`` s past the cancel (whatever the status
    says) and past twice its usual step, with nothing written to its events for ``grace``
    s (or, after ``grace`` s, as soon as it has written two more steps: it reads no cancel):
    SIGTERM the process group; 3 s more: SIGKILL.

    A job stops at its next step boundary: one whose steps take longer than ``grace`` (a
    training on a loaded machine: 7.7 s a step) was signalled mid-step, or while it wrote
    its last checkpoint, and ended "stopped on request (signalled)" with no result (the
    terminal's Ctrl-C asks with a 2 s grace). The wait is bounded by
    :data:`STOPPING_CAP_S` past the longer of the two.

    The group is signalled only while its leader is the job's own process (checked just
    before each signal); otherwise a warning event says why nothing was signalled."""
    proc = read_json(job.run_dir / "process.json", {})
    proc = proc if isinstance(proc, dict) else {}
    pid = proc.get("pid")
    events = job.run_dir / "events.jsonl"
    start = time.monotonic()
    times = _progress(job)
    least = max(grace, 2.0 * _step_gap(times))
    cap = start + least + STOPPING_CAP_S
    size, changed, steps, deaf = _size(events), start, len(times), False
    # the processes gone, not the status final: rank 0 may write 'cancelled' and leave while
    # a peer that saw the cancel a step later waits in a collective for it, for ever
    while pid_alive(pid):
        now = time.monotonic()
        if (now_size := _size(events)) != size:  # still writing: a checkpoint, its end
            size, changed = now_size, now
            # two steps more since the cancel: it passed a step's end and went on (a job
            # that reads no cancel), not one finishing its step
            deaf = len(_progress(job)) - steps >= 2
        if (now - start >= least and now - changed >= grace) or now >= cap \
                or (deaf and now - start >= grace):
            if not _signal_group(job, proc, pid):
                return  # not the job's process: said in a warning, nothing signalled
            break
        time.sleep(0.1)
    time.sleep(0.3)
    if not job.refresh().final:
        job.emit("status", status="cancelled", message="stopped on request (signalled)")
        job.refresh()


def _signal_group(job, proc: dict, pid) -> bool:
    """SIGTERM the job's process group, then SIGKILL 3 s later, while it is the job's;
    False when it is not (a warning event says why)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        why = identity_mismatch(proc)
        if why is not None:
            job.emit("log", level="warning", message=f"not signalled: {why}")
            return False
        kill_group(pid, sig)
        end = time.monotonic() + 3
        while time.monotonic() < end and pid_alive(pid):
            time.sleep(0.1)
        if not pid_alive(pid):
            break
    return True


def kill_group(pid, sig) -> None:
    """Send ``sig`` to the process group led by ``pid`` (gone or not ours: nothing)."""
    if not pid or isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1:
        return
    try:
        os.killpg(int(pid), sig)
    except (ProcessLookupError, PermissionError):
        pass

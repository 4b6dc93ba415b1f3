"""Stopping a process job from outside: wait for the cooperative stop, then signal its group.

Used by the process runner (a job it launched) and by a reattached :class:`~skiff.jobs.Job`
(a job launched by another process), so neither has to import the other.
"""

from __future__ import annotations

import os
import signal
import time

from .store import pid_alive, read_json

__all__ = ["escalate_cancel", "kill_group"]


def escalate_cancel(job, grace: float = 5.0) -> None:
    """After ``grace`` s still running: SIGTERM the process group; 3 s more: SIGKILL."""
    proc = read_json(job.run_dir / "process.json", {})
    pid = proc.get("pid")
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if job.refresh().final or not pid_alive(pid):
            break
        time.sleep(0.1)
    else:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            kill_group(pid, sig)
            end = time.monotonic() + 3
            while time.monotonic() < end and pid_alive(pid):
                time.sleep(0.1)
            if not pid_alive(pid):
                break
    time.sleep(0.3)
    if not job.refresh().final:
        job.emit("status", status="cancelled", message="stopped on request (signalled)")
        job.refresh()


def kill_group(pid, sig) -> None:
    """Send ``sig`` to the process group led by ``pid`` (gone or not ours: nothing)."""
    if not pid:
        return
    try:
        os.killpg(int(pid), sig)
    except (ProcessLookupError, PermissionError):
        pass

"""Who holds a process job, and starting the small detached processes that hold or stop one
(their code is :mod:`skiff.jobs.reaper`).

A job of MPI ranks must never outlive both its launcher and every watcher. Each process
that holds a job (the launcher, a detached holder) writes ``holders/<pid>`` in the run
folder with its start time, so a reused pid is not mistaken for it; the ranks' watchdog
(:mod:`skiff.jobs.worker`) stops the job when no holder is alive.

Two detached processes, each started in a session of its own so that the terminal or kernel
that started it can exit:

- ``python -m skiff.jobs.reaper hold RUN_DIR``: takes over a running job when its launcher
  exits normally (a kernel restart, ``python -c "launch(...)"``), and lets go when the job
  ends. A launcher killed outright hands nothing over, and its ranks stop.
- ``python -m skiff.jobs.reaper cancel RUN_DIR GRACE``: owns a cancel's escalation (SIGTERM,
  then SIGKILL of the process group after the grace period) for ``skiff jobs cancel ID`` from
  a terminal, whose CLI exits at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from .store import pid_alive, proc_stat

__all__ = ["process_start", "add_holder", "remove_holder", "live_holders", "hold",
           "start_detached", "start_holder", "start_reaper"]

HOLDERS = "holders"


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks since boot, from /proc), which with
    the pid names one process for good; None when it is gone (or no /proc: then "?")."""
    fields = proc_stat(pid)
    if fields is None:
        return "?" if pid_alive(pid) and not os.path.exists(f"/proc/{int(pid)}") else None
    if fields[0] == "Z":      # a zombie is gone
        return None
    return fields[19]         # field 22 of stat: starttime


def add_holder(run_dir: str | os.PathLike, pid: int | None = None) -> Path:
    """Record process ``pid`` (default: this one) as holding the job in ``run_dir``."""
    pid = os.getpid() if pid is None else int(pid)
    folder = Path(run_dir) / HOLDERS
    folder.mkdir(exist_ok=True)
    path = folder / str(pid)
    tmp = folder / f".{pid}.tmp"
    tmp.write_text(process_start(pid) or "?")
    os.replace(tmp, path)
    return path


def remove_holder(run_dir: str | os.PathLike, pid: int | None = None) -> None:
    try:
        (Path(run_dir) / HOLDERS / str(os.getpid() if pid is None else pid)).unlink()
    except OSError:
        pass


def live_holders(run_dir: str | os.PathLike) -> list[int]:
    """The pids of the processes holding the job that are still the same processes."""
    out = []
    try:
        entries = list((Path(run_dir) / HOLDERS).iterdir())
    except OSError:
        return out
    for path in entries:
        if not path.name.isdigit():
            continue
        try:
            recorded = path.read_text().strip()
        except OSError:
            continue
        now = process_start(int(path.name))
        if now is not None and (recorded in ("?", now) or now == "?"):
            out.append(int(path.name))
    return out


@contextmanager
def hold(run_dir: str | os.PathLike):
    """Hold the job while the block runs (a watcher that follows it from another process)."""
    add_holder(run_dir)
    try:
        yield
    finally:
        remove_holder(run_dir)


def start_detached(*args: str) -> subprocess.Popen:
    """``python -m skiff.jobs.reaper ARGS`` in a session of its own, detached from the
    terminal (no stdin, output to /dev/null)."""
    return subprocess.Popen([sys.executable, "-m", "skiff.jobs.reaper", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def start_holder(run_dir: str | os.PathLike) -> int:
    """Hand a running job to a detached holder; it is recorded as holding before this
    returns, so the ranks never see the job unheld."""
    proc = start_detached("hold", str(run_dir))
    add_holder(run_dir, proc.pid)
    return proc.pid


def start_reaper(job, grace: float = 5.0) -> int:
    """Escalate ``job``'s cancel from a detached process (it survives this one)."""
    return start_detached("cancel", str(job.run_dir), repr(float(grace))).pid

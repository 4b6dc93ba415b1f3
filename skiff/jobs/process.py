"""ProcessRunner: N MPI ranks started by ``mpiexec`` (never a fork of the notebook).

Rank 0 writes events; the notebook follows the file. A watcher thread notices a rank that
died (its pid gone without a clean-exit marker) or a launcher that exited, kills what is left
of the job's process group, and fails the job with a message naming the rank and its signal.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .holders import add_holder, remove_holder, start_holder
from .signals import escalate_cancel, kill_group, stopped_why
from .store import pid_alive, write_json

if TYPE_CHECKING:
    from .job import Job

__all__ = ["ProcessRunner", "find_mpiexec", "escalate_cancel", "MPIUnavailable",
           "mpiexec_command", "rank_env", "launcher_env", "LOOPBACK_ENV"]


class MPIUnavailable(RuntimeError):
    """No mpiexec could be found."""


def find_mpiexec() -> str:
    """mpiexec from this interpreter's environment (the ``mpi`` extra), else from PATH."""
    here = Path(sys.executable).parent
    for name in ("mpiexec", "mpirun"):
        cand = here / name
        if cand.exists():
            return str(cand)
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if not found:
        raise MPIUnavailable(
            "no mpiexec found: install the MPI extra (pip install 'skiff[mpi]') to run --np > 1"
        )
    return found


@functools.lru_cache(maxsize=4)
def _is_hydra(mpiexec: str) -> bool:
    """MPICH's hydra launcher (the ``mpi`` extra) knows ``-disable-auto-cleanup``."""
    try:
        out = subprocess.run([mpiexec, "-info"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "hydra" in (out.stdout + out.stderr).lower()


# seconds ranks may run on after the job's final status (MPI's own end, a slow machine)
# before they are taken as left in a collective by peers that stopped, and ended
FINAL_GRACE_S = float(os.environ.get("SKIFF_FINAL_GRACE_S") or 30.0)  # as worker.py's

# a job on this machine keeps its MPI traffic on the loopback interface: UCX and libfabric
# (MPICH's ch4 netmods), MPICH ch3's TCP netmod, Open MPI's TCP transports; a value the user
# set is kept
LOOPBACK_ENV = {
    "UCX_NET_DEVICES": "lo",
    "FI_TCP_IFACE": "lo",
    "FI_SOCKETS_IFACE": "lo",
    "MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE": "lo",
    "MPIR_CVAR_CH3_INTERFACE_HOSTNAME": "127.0.0.1",
    "OMPI_MCA_btl_tcp_if_include": "lo",
    "OMPI_MCA_oob_tcp_if_include": "lo",
}


def rank_env(np: int, *, local: bool = True) -> dict:
    """Environment for N ranks: each gets an equal share of the cores for BLAS and numba;
    a local job's MPI traffic stays on the loopback interface, and its ranks stop when
    nobody holds the job (``SKIFF_HELD``, see :mod:`skiff.jobs.holders`)."""
    from skiff.kernels.backend.devices import cpu_count

    threads = str(max(1, cpu_count() // max(1, np)))
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = threads
    env["PYTHONUNBUFFERED"] = "1"
    if local:
        for var, value in LOOPBACK_ENV.items():
            env.setdefault(var, value)
        env["SKIFF_HELD"] = "1"
    return env


def launcher_env(mpiexec: str, np: int) -> tuple[dict, str | None]:
    """The environment of a local job's mpiexec (:func:`rank_env`) and the bind shim it
    preloads (None: hydra's control port listens on every interface, said in the log)."""
    env = rank_env(np)
    if not _is_hydra(mpiexec):
        return env, None
    from .loopback import bind_shim

    shim = bind_shim()
    if shim:
        env["LD_PRELOAD"] = " ".join(p for p in (shim, os.environ.get("LD_PRELOAD")) if p)
    return env, shim


def mpiexec_command(mpiexec: str, np: int, run_dir, *, oversubscribe: bool = False,
                    extra_args: list[str] | None = None) -> list[str]:
    """The mpiexec command line of a job of ``np`` ranks on this machine.

    Hydra (MPICH): ``-hosts localhost -iface lo`` keep its proxies on the loopback
    interface, ``-disable-auto-cleanup`` leaves the order of death to the watcher. Open
    MPI: ``--oversubscribe`` when asked (hydra places any number of ranks on a host).

    Hydra binds its own control port to every interface and has no option to choose
    another address: :func:`launcher_env` preloads the bind shim of
    :mod:`skiff.jobs.loopback` into mpiexec and its proxies, and ``-genv LD_PRELOAD`` gives
    the ranks the user's own value back. (MPICH's ``mpiexec.gforker`` has no port at all but
    stops the other ranks with SIGINT/SIGQUIT on a death or an abort, which the watcher's
    account of who died first does not survive.)"""
    if _is_hydra(mpiexec):
        local = ["-hosts", "localhost", "-iface", "lo", "-disable-auto-cleanup",
                 "-genv", "LD_PRELOAD", os.environ.get("LD_PRELOAD", "")]
    else:
        local = ["--oversubscribe"] if oversubscribe else []
    return [mpiexec, "-n", str(int(np)), *local, *(extra_args or []),
            sys.executable, "-m", "skiff.jobs.worker", str(run_dir)]


# hydra (MPICH) reports a dead rank as "PID n RUNNING AT host / EXIT CODE: 9 ... (signal 9)";
# older releases as "RANK r PID n ... KILLED BY SIGNAL: 9"
_BAD_PID = re.compile(r"(?:RANK\s+(\d+)\s+)?PID\s+(\d+)\s+RUNNING AT")
_SIGNAL = re.compile(r"KILLED BY SIGNAL:\s*(\d+)|\(signal\s+(\d+)\)|EXIT CODE:\s*(\d+)")
_EXIT_SIGNAL = re.compile(r"KILLED BY SIGNAL:\s*(\d+)|EXIT STRING:[^\n]*\(signal\s+(\d+)\)")


_HANDING_OVER: list[ProcessRunner] = []


def _hand_over_at_exit(runner: ProcessRunner) -> None:
    """When this process exits normally (a kernel restart, the end of a script), its running
    jobs are handed to detached holders; a process killed outright hands nothing over, and
    its ranks stop (see ``_watch_holders`` in worker.py)."""
    if runner in _HANDING_OVER:
        return
    if not _HANDING_OVER:
        atexit.register(_hand_over)
    _HANDING_OVER.append(runner)


def _hand_over() -> None:
    for runner in _HANDING_OVER:
        for job in runner.running():
            try:
                start_holder(job.run_dir)
            except OSError:
                pass
            remove_holder(job.run_dir)


class ProcessRunner:
    name = "process"

    def __init__(self, poll: float = 0.2):
        self.poll = poll
        self._procs: dict[str, subprocess.Popen] = {}
        self._jobs: dict[str, Job] = {}
        self._watchers: dict[str, threading.Thread] = {}

    def start(self, job: Job, np: int = 1, *, extra_args: list[str] | None = None,
              oversubscribe: bool = False, secrets: dict | None = None) -> Job:
        mpiexec = find_mpiexec()
        # mpiexec's own clean-up would kill the other ranks within a millisecond of the first
        # death, leaving no way to tell which rank went first; the watcher here (and each
        # rank's peer watchdog, see worker.py) stops the rest instead
        cmd = mpiexec_command(mpiexec, np, job.run_dir, oversubscribe=oversubscribe,
                              extra_args=extra_args)
        add_holder(job.run_dir)   # this process holds the job until it exits
        _hand_over_at_exit(self)
        env, shim = launcher_env(mpiexec, np)
        if secrets:  # secret options (jobs/secret.py): to the ranks, never on disk
            import json

            from .secret import SECRETS_ENV

            env[SECRETS_ENV] = json.dumps(secrets)
        log = open(job.run_dir / "logs" / "launcher.log", "ab")  # noqa: SIM115
        if shim is None and _is_hydra(mpiexec):
            log.write(b"skiff: no C compiler to build the loopback bind shim; mpiexec's "
                      b"control port listens on every interface\n")
            log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=os.getcwd())
        log.close()
        from .signals import process_identity
        from .trust import sign_record

        write_json(job.run_dir / "process.json", sign_record(
            {"pid": proc.pid, "pgid": proc.pid, "cmd": cmd, "started": time.time(),
             **process_identity(proc.pid)}, "process"))
        self._procs[job.id] = proc
        self._jobs[job.id] = job
        job.attach(self)
        watcher = threading.Thread(target=self._watch, args=(job, proc, np), daemon=True,
                                   name=f"skiff-watch-{job.id}")
        self._watchers[job.id] = watcher
        watcher.start()
        return job

    def _watch(self, job: Job, proc: subprocess.Popen, np: int) -> None:
        lost = None
        try:
            self._watch_until_end(job, proc, np)
        except OSError as exc:  # its end could not be written (a full disk, a removed folder)
            lost = f"{type(exc).__name__}: {exc}"
        finally:
            remove_holder(job.run_dir)
            if not job.refresh().final:  # mpiexec is gone: whoever follows the job here
                # must not wait forever for an end that was not written (or not where read)
                ended = f"mpiexec exited with code {proc.poll()}"
                job.end_unrecorded("failed", job.lost_note(
                    f"{ended}; its end could not be written ({lost})" if lost else
                    f"{ended} and its final event could not be read back"))
            job.notify_done()

    def running(self) -> list[Job]:
        """The jobs this runner started whose mpiexec is still running."""
        return [self._jobs[i] for i, p in list(self._procs.items()) if p.poll() is None]

    def _watch_until_end(self, job: Job, proc: subprocess.Popen, np: int) -> None:
        ranks = RankWatch(job.run_dir / "ranks", np)
        ended = None  # when the job's final status was first seen with mpiexec still running
        try:
            while True:
                code = proc.poll()
                if code is None:
                    ended = self._left_behind(job, proc, ended)
                if code is not None:
                    # deaths already signalled on their pidfds first: a busy machine can let
                    # mpiexec's end be seen before them, and MPICH 5's report names no pid
                    dead = ranks.first_dead or ranks.wait(0)
                    self._after_exit(job, code, dead, ranks.together, np)
                    return
                dead = ranks.wait(self.poll)
                if dead is not None:
                    time.sleep(1.0)  # let mpiexec report how the rank ended
                    code = proc.poll()  # before this watcher's own kill of the group
                    kill_group(proc.pid, signal.SIGKILL)
                    try:
                        proc.wait(5)
                    except subprocess.TimeoutExpired:
                        pass
                    if (job.run_dir / "cancel").exists() and not job.refresh().final:
                        # a cancel escalated to signals: the death was asked for; or a
                        # rank SIGTERM'd where it stood left (no exit marker) and its peers
                        # with it: that is the why, not a request (round 44)
                        job.emit("status", status="cancelled",
                                 message=stopped_why(job.run_dir, np)
                                 or "stopped on request (signalled)")
                        return
                    if code is not None and code < 0:  # mpiexec killed: its ranks with it
                        self._fail(job, _launcher_killed(proc.pid, -code))
                        return
                    if ranks.first_dead is None:  # found dead, not seen dying: ask mpiexec
                        dead = (_dead_from_log(job.run_dir) or (*dead, None))[:2]
                    rank, pid = dead
                    self._fail(job, _death_message(job.run_dir, rank, pid, ranks.together),
                               dead_rank=rank)
                    return
        finally:
            ranks.close()

    def _left_behind(self, job: Job, proc: subprocess.Popen, ended: float | None):
        """Ranks that run on ``FINAL_GRACE_S`` after the job's final status were left in a
        collective by peers that stopped (round 45: a SIGTERM'd rank of a kind whose ranks
        do not agree on the stop: rank 0 wrote "cancelled" and left, rank 1 waited in its
        all-reduce, spinning a core, and mpiexec with it, for ever: no cancel of this
        process's to escalate). Their process group is ended, as a cancel's escalation
        ends it; the status stays what the job said. Returns when the end was first seen."""
        if ended is None:
            return time.monotonic() if job.refresh().final else None
        if ended < 0 or time.monotonic() - ended < FINAL_GRACE_S:
            return ended
        alive = [r for r in range(int(job.meta.get("np") or 1))
                 if not (job.run_dir / "ranks" / f"{r}.exit").exists()]
        job.emit("log", level="warning", message=(
            f"rank{'s' if len(alive) != 1 else ''} {', '.join(map(str, alive)) or '?'} still "
            f"running {FINAL_GRACE_S:g} s after the job ended ({job.status}): left waiting "
            f"for peers that stopped; their processes are ended"))
        for sig in (signal.SIGTERM, signal.SIGKILL):  # mpiexec is this process's child
            kill_group(proc.pid, sig)
            try:
                proc.wait(3)
                break
            except subprocess.TimeoutExpired:
                pass
        return -1.0  # signalled once

    def _after_exit(self, job: Job, code: int, first_dead=None, together=(),
                    np: int = 1) -> None:
        time.sleep(0.05)
        state = job.refresh()
        if state.final and not state.error_from_comm:
            return
        if (job.run_dir / "cancel").exists():
            # a cancel that ended in signals (mpiexec's exit not 0: the escalation's SIGTERM
            # reached it before its own "cancelled" line; round 39 saw this race under load)
            job.emit("status", status="cancelled",
                     message=stopped_why(job.run_dir, np)
                     or "stopped on request" + (" (signalled)" if code else ""))
            return
        if code < 0:  # mpiexec killed by a signal (its ranks' deaths follow from it)
            self._fail(job, _launcher_killed(self._procs[job.id].pid, -code))
            return
        dead = first_dead or (_dead_from_log(job.run_dir) or (None, None, None))[:2]
        rank = dead[0]
        if rank is not None:
            msg = _death_message(job.run_dir, *dead, together if first_dead else ())
        elif state.final:
            return  # a rank's own error already explains it
        else:
            tail = _log_text(job.run_dir).strip().splitlines()[-5:]
            msg = f"mpiexec exited with code {code}" + (": " + " | ".join(tail) if tail else "")
        self._fail(job, msg, dead_rank=rank)

    def _fail(self, job: Job, message: str, *, dead_rank=None) -> None:
        """Fail the job with ``message``. A job that already failed keeps its error, unless
        that error was a rank's communication failure and this names the rank that died
        (the cause, not the symptom)."""
        state = job.refresh()
        if state.final and not (dead_rank is not None and state.error_from_comm):
            return
        job.emit("error", message=message, traceback=_log_text(job.run_dir)[-4000:] or None,
                 dead_rank=dead_rank)
        if not state.final:
            job.emit("status", status="failed", message=message)
        job.refresh()

    def cancel(self, job: Job, *, grace: float = 5.0) -> None:
        threading.Thread(target=escalate_cancel, args=(job, grace), daemon=True).start()

    def join(self, job: Job, timeout: float | None = None) -> None:
        watcher = self._watchers.get(job.id)
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout)


class RankWatch:
    """Notices the first rank to die, within microseconds where Linux pidfds exist.

    mpiexec kills the other ranks a moment after one dies, and its report may then name
    whichever of them comes first in its own order, so the order of death has to be seen
    here. A rank that ends cleanly writes ``ranks/<r>.exit`` before exiting and is ignored.
    """

    def __init__(self, ranks_dir: Path, np: int):
        import select

        self.ranks_dir, self.np = ranks_dir, np
        self.first_dead: tuple[int, int] | None = None
        # the other ranks seen dead in the same look as first_dead, when there were several:
        # which of them died first was not seen (mpiexec's clean-up kills the others within
        # milliseconds, and a busy machine can keep this watcher from looking in between)
        self.together: list[tuple[int, int]] = []
        self.dead_unseen: list[tuple[int, int]] = []  # already gone when first looked at
        self._fds: dict[int, tuple[int, int]] = {}  # fd -> (rank, pid)
        self._watched: set[int] = set()
        self._poll = select.poll() if hasattr(os, "pidfd_open") else None

    def _register(self) -> None:
        for rank in range(self.np):
            if rank in self._watched:
                continue
            pid_file = self.ranks_dir / f"{rank}.pid"
            try:
                pid = int(pid_file.read_text())
            except (OSError, ValueError):
                continue
            self._watched.add(rank)
            if self._poll is None:
                self._fds[-1 - rank] = (rank, pid)
                continue
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                if not (self.ranks_dir / f"{rank}.exit").exists() and \
                        not (self.ranks_dir / f"{rank}.left").exists():
                    self.dead_unseen.append((rank, pid))  # the order of death is unknown
                continue
            except OSError:
                self._fds[-1 - rank] = (rank, pid)  # no pidfd here: poll the pid instead
                continue
            self._fds[fd] = (rank, pid)
            self._poll.register(fd, 1)  # POLLIN: the process has exited

    def wait(self, timeout: float):
        """Wait up to ``timeout`` s; return (rank, pid) of the first rank that died, or None.

        While some ranks have not written their pid yet, look again every 20 ms, so that a
        death is seen as it happens rather than found afterwards."""
        self._register()
        if len(self._watched) < self.np:
            timeout = min(timeout, 0.02)
        if self.first_dead is not None:
            return self.first_dead
        if self.dead_unseen:
            return self.dead_unseen[0]
        seen = []
        if self._poll is not None and any(fd >= 0 for fd in self._fds):
            for fd, _ in self._poll.poll(timeout * 1000):
                seen.append(self._fds.pop(fd))
                self._poll.unregister(fd)
                os.close(fd)
        elif timeout > 0:
            time.sleep(timeout)
        for key, (rank, pid) in list(self._fds.items()):
            if key < 0 and not pid_alive(pid):
                del self._fds[key]
                seen.append((rank, pid))
        causes = [d for d in seen if self._cause(*d)]
        if self.first_dead is None and causes:
            # several at once: the one whose process is gone (reaped by its proxy, which then
            # killed the others) before one still a zombie; else the order is unknown
            causes.sort(key=lambda d: _zombie(d[1]))
            self.first_dead, self.together = causes[0], causes[1:]
        return self.first_dead

    def _cause(self, rank: int, pid: int) -> bool:
        """Whether a dead rank can be the cause: no clean exit marker, nor a peer watchdog's
        ``<r>.left`` (a rank that left because a peer died)."""
        return not (self.ranks_dir / f"{rank}.exit").exists() \
            and not (self.ranks_dir / f"{rank}.left").exists()

    def close(self) -> None:
        for fd in [fd for fd in self._fds if fd >= 0]:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()


_FAULTS = {"Segmentation fault": 11, "Bus error": 7, "Floating-point exception": 8,
           "Floating point exception": 8, "Illegal instruction": 4, "Aborted": 6}


def _death_signal(run_dir: Path, rank: int, pid: int) -> tuple[int | None, str]:
    """The signal that ended ``rank`` and how it is known."""
    try:
        fault = (run_dir / "logs" / f"fault-rank{rank}.txt").read_text()
        for name, sig in _FAULTS.items():
            if name in fault:
                return sig, ""
    except OSError:
        pass
    reported = _dead_from_log(run_dir)
    if reported and reported[1] == pid and reported[2]:
        return reported[2], ""
    if not reported:  # MPICH 5's mpiexec names no pid, only the first signal that ended one
        said = _EXIT_SIGNAL.search(_log_text(run_dir))
        if said:
            return int(next(g for g in said.groups() if g is not None)), \
                " (as mpiexec reported it)"
    # no clean exit, no Python error, no crash report: SIGKILL (a user, a scheduler or the
    # kernel's out-of-memory killer), or a terminating signal that mpiexec did not report
    return 9, " (inferred: no exit, error or crash report)"


def _death_message(run_dir: Path, rank, pid, together=()) -> str:
    sig, note = _death_signal(run_dir, rank, pid)
    if together:  # seen dead in the same look: which was first is not known
        others = " or ".join(f"rank {r} (pid {p})" for r, p in together)
        return (f"rank {rank} (pid {pid}) or {others} killed by signal {sig} "
                f"({_signame(sig)}){note}, the other by mpiexec's clean-up (they were seen "
                "dead together: which died first was not seen); the job was stopped")
    return (f"rank {rank} (pid {pid}) killed by signal {sig} ({_signame(sig)}){note}; "
            "the job was stopped")


def _launcher_killed(pid: int, sig: int) -> str:
    """The failure of a job whose mpiexec was killed (its proxies then kill the ranks, which
    die of signal 9: naming a rank was naming a follower)."""
    return (f"mpiexec (pid {pid}) was killed by signal {sig} ({_signame(sig)}), and its ranks "
            "with it; the job was stopped")


def _zombie(pid: int) -> bool:
    """Whether ``pid`` is a zombie: dead, not yet reaped by its parent."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _log_text(run_dir: Path) -> str:
    try:
        return (run_dir / "logs" / "launcher.log").read_text(errors="replace")
    except OSError:
        return ""


def _rank_of_pid(run_dir: Path, pid: int) -> int | None:
    for pid_file in (run_dir / "ranks").glob("*.pid"):
        try:
            if int(pid_file.read_text()) == pid:
                return int(pid_file.stem)
        except ValueError:
            continue
    return None


def _dead_from_log(run_dir: Path):
    """(rank, pid, signal or None) of the rank mpiexec reported dead, if it did."""
    text = _log_text(run_dir)
    m = _BAD_PID.search(text)
    if not m:
        return None
    pid = int(m.group(2))
    rank = int(m.group(1)) if m.group(1) is not None else _rank_of_pid(run_dir, pid)
    sig = None
    s = _SIGNAL.search(text, m.end())
    if s:
        sig = int(next(g for g in s.groups() if g is not None))
    return ("?" if rank is None else rank), pid, sig


def _signame(sig: int | None) -> str:
    try:
        return signal.Signals(int(sig)).name
    except (ValueError, TypeError):
        return "unknown"

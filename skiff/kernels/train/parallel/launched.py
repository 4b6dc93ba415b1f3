"""Ranks a parent starts as their own MPI job and joins through a port, so that a rank
killed outright (SIGKILL, the OOM killer) ends their job and never the parent.

``MPI.COMM_SELF.Spawn`` makes the spawned ranks and their parent one job of MPICH's Hydra:
when a rank is killed, Hydra's clean-up SIGKILLs every process of the job, the parent (a
notebook's kernel) included. Nothing turns that off here (MPICH 5.0.2: ``mpiexec
-disable-auto-cleanup`` still kills rank 0 when rank 1 is SIGKILLed, ``MPIR_CVAR_ENABLE_FT=1``
fails ``MPI_Init``, and ``Spawn`` has no info key for it; ``docs/distributed.md``, "Round
32"). Ranks started by their own ``mpiexec`` are another job: the parent opens a port,
starts ``mpiexec -n N python script.py`` with the port in :data:`ENV`, and accepts their
connection; each rank calls :func:`parent` once, at its start, for the inter-communicator
(as it would call ``MPI.Comm.Get_parent()``)::

    inter = launch_ranks(["train.py"], np=2)            # the parent (a notebook)
    results = gather_from_ranks(inter, timeout=600)      # [None, rank 0's, rank 1's]

    inter = parent()                                    # each rank, first thing
    ...; to_parent(result)                              # inter.gather, acknowledged

:func:`.spawned.wait_for_ranks` also watches the ranks' ``mpiexec``: when it ends before
the call completes (a rank killed outright ends the whole job), it raises
:class:`.spawn_failure.SpawnedRanksFailed` with its exit status at once, not after the
timeout. The parent lives on; leave the inter-communicator as it is (no ``Disconnect``).

A rank that gathers and leaves at once without ``MPI_Finalize`` (``os._exit``, as skiff's
multi-rank workers do) could lose its part: MPICH's UCX reports an eager send complete while
the bytes are still in its own queue (round 33: 1 launch in 40 at load 10, the parent then
heard "exit status 0 before the gather"). :func:`to_parent` gathers and then waits for the
parent's acknowledgement (:func:`.spawned.gather_from_ranks` sends it once it holds every
part), so a rank may leave any way it likes after it returns. A rank that ends normally
(``MPI_Finalize`` flushes what it sent) may keep its bare ``inter.gather``; the parent waits
:data:`.spawned.DRAIN_S` for parts still on their way after the job ended cleanly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from .spawn_failure import SpawnedRanksFailed

__all__ = ["ENV", "launch_ranks", "parent", "launched_process", "end_ranks", "to_parent",
           "ACK_TAG"]

ENV = "SKIFF_PARENT_PORT"
ACK_TAG = 29_018  # the parent's "I hold every part" after a gather (ALARM_TAG's neighbour)
_ACKS: list = []  # the parent's acknowledgements still in flight (kept, not waited for)
_JOBS: dict[int, subprocess.Popen] = {}  # an inter-communicator's handle: its ranks' mpiexec
_PARENT: list = []


def _mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if not found:
        raise FileNotFoundError("launch_ranks needs mpiexec (MPICH's, beside this Python or "
                                "on PATH)")
    return found


def launch_ranks(args, np: int = 2, *, python: str | None = None,
                 timeout: float = 120.0, env: dict | None = None):
    """Start ``np`` ranks of ``python args...`` as their own MPI job and return the
    inter-communicator to them (the parent is its rank 0 of the local group, as with
    ``Spawn``). Each rank must call :func:`parent`. Each rank's BLAS gets its share of the
    cores. Raises :class:`SpawnedRanksFailed` when their job ends before all of them
    joined, ``TimeoutError`` after ``timeout`` seconds (their job is killed then)."""
    from mpi4py import MPI

    from skiff.kernels.backend import cpu_count

    if isinstance(args, (str, os.PathLike)):
        args = [args]
    np = int(np)
    if np < 1:
        raise ValueError(f"np must be at least 1, got {np!r}")
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:  # as rank_alarm.threads_allowed
        raise RuntimeError("launch_ranks waits for the ranks in a thread: it needs "
                           "MPI_THREAD_MULTIPLE (mpi4py asks for it unless "
                           "mpi4py.rc.thread_level is set lower)")
    port = MPI.Open_port()
    run_env = dict(os.environ if env is None else env)
    threads = str(max(1, cpu_count() // np))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        run_env[var] = threads
    run_env[ENV] = port
    proc = subprocess.Popen([_mpiexec(), "-n", str(np), python or sys.executable,
                             *map(str, args)], env=run_env, start_new_session=True)
    box: dict = {}

    def accept():
        try:
            box["inter"] = MPI.COMM_SELF.Accept(port, root=0)
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=accept, daemon=True, name="skiff-accept-ranks")
    thread.start()
    end = time.monotonic() + float(timeout)
    while thread.is_alive():
        thread.join(0.2)
        if not thread.is_alive():
            break
        if proc.poll() is not None:
            raise SpawnedRanksFailed(
                f"the {np} ranks' job ended (mpiexec exit status {proc.returncode}) before "
                f"they joined this process: see their output (each rank calls "
                f"skiff.kernels.train.parallel.launched.parent() first)")
        if time.monotonic() > end:
            _end(proc)
            raise TimeoutError(f"the {np} ranks did not join in {timeout:g} s (does each "
                               "call parent() first?); their job was ended")
    if "error" in box:
        _end(proc)
        raise box["error"]
    try:
        MPI.Close_port(port)
    except Exception:  # noqa: BLE001 - the port is only a name now
        pass
    inter = box["inter"]
    _JOBS[_handle(inter)] = proc
    return inter


def launched_process(inter) -> subprocess.Popen | None:
    """The ranks' ``mpiexec`` of an inter-communicator :func:`launch_ranks` returned (None:
    another one, e.g. ``Spawn``'s)."""
    return _JOBS.get(_handle(inter))


def parent():
    """This rank's inter-communicator to the process that started its job: the one
    :func:`launch_ranks` accepts (collective over ``MPI.COMM_WORLD``: every rank calls it,
    at its start), else ``MPI.Comm.Get_parent()`` (``Spawn``; ``MPI.COMM_NULL`` when no
    process started this one). The rank alarm tells this parent when the rank fails."""
    from mpi4py import MPI

    if _PARENT:
        return _PARENT[0]
    port = os.environ.get(ENV)
    inter = MPI.COMM_WORLD.Connect(port, root=0) if port else MPI.Comm.Get_parent()
    _PARENT.append(inter)
    return inter


def to_parent(value, *, timeout: float = 60.0):
    """Give ``value`` to the parent's :func:`.spawned.gather_from_ranks` (every rank calls
    it, as ``inter.gather(value, root=0)``) and return once the parent acknowledges that it
    holds every rank's part: the rank may then leave at once, even with ``os._exit``.
    ``TimeoutError`` when no acknowledgement came in ``timeout`` seconds (a parent gathering
    with a bare ``inter.gather`` sends none: leave normally then, which flushes). Ranks
    started by ``Spawn`` only gather (no acknowledgement comes to them)."""
    from mpi4py import MPI

    inter = parent()
    if inter == MPI.COMM_NULL:
        raise RuntimeError("to_parent: no parent started this process (launch_ranks or Spawn)")
    inter.gather(value, root=0)
    if not os.environ.get(ENV):  # Spawn's ranks: their parent sends no acknowledgement
        return
    end = time.monotonic() + float(timeout)
    while not inter.Iprobe(source=0, tag=ACK_TAG):
        if time.monotonic() > end:
            raise TimeoutError(f"the parent did not acknowledge the gather in {timeout:g} s "
                               "(it gathers with skiff.gather_from_ranks?)")
        time.sleep(0.005)
    inter.recv(source=0, tag=ACK_TAG)


def acknowledge(inter) -> None:
    """The parent's side of :func:`to_parent`: tell every rank that their parts are here
    (sends not waited for: a rank that gathered bare may have left already)."""
    for rank in range(inter.Get_remote_size()):
        try:
            _ACKS.append(inter.isend(True, dest=rank, tag=ACK_TAG))
        except Exception:  # noqa: BLE001 - a rank gone: it needed no acknowledgement
            pass
    _ACKS[:] = [req for req in _ACKS if not _done(req)]


def _done(req) -> bool:
    try:
        return bool(req.Test())
    except Exception:  # noqa: BLE001
        return True


def connected_parent():
    """The inter-communicator :func:`parent` connected, without connecting (a failing rank
    cannot start a collective); None when it was not called or no port was given."""
    return _PARENT[0] if _PARENT and os.environ.get(ENV) else None


def _handle(inter) -> int:
    try:
        return int(inter.py2f())
    except Exception:  # noqa: BLE001
        return id(inter)


def end_ranks(proc: subprocess.Popen, grace: float = 5.0) -> bool:
    """End the ranks' job after a rank failed: ``grace`` seconds to leave on their own (the
    rank alarm's exit), then their ``mpiexec`` and every rank are killed (a rank that
    joined the parent's bare gather in a thread may never leave). True when it had to."""
    try:
        proc.wait(timeout=grace)
        return False
    except subprocess.TimeoutExpired:
        _end(proc)
        return True


def _end(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        proc.wait(timeout=5)
    except Exception:  # noqa: BLE001
        pass

"""Round 33 (h6): ranks started by ``launch_ranks`` that give their part and leave at once.

Round 32 left a race (CI, 1 run in 3): a rank that gathered to the parent and left at once
could end the ranks' ``mpiexec`` before the parent's gather had taken the parts, and the
parent said "the ranks' job ended (exit status 0) before the gather". Measured here (load
10, 2 cores): with a bare ``inter.gather`` and ``os._exit`` 1 launch in 20-40 failed, and
one part was lost outright (MPICH's UCX calls an eager send done while it is still queued).
Now ``launched.to_parent`` waits for the parent's acknowledgement, and the parent waits
``spawned.DRAIN_S`` for parts still on their way after a clean end (exit status 0); a rank
that fails still gives ``SpawnedRanksFailed`` at once, with no rank left behind.
The oracle: the parts each rank computes, recomputed here with numpy, and /proc for
leftovers. ``timeout -s KILL`` bounds every run.

usage (by the tests): python THIS parent KIND   (KIND: repeat | late | fail | hang | silent)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[4]
LAUNCHES = 20


def part(rank: int, i: int) -> list[float]:
    """What rank ``rank`` gives in launch ``i`` (recomputed by the test)."""
    return (np.arange(64, dtype=np.float64) * (rank + 1) + i).tolist()


def leftover_pids() -> list[int]:
    """Live processes running this file as a rank."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{d}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and str(HERE).encode() in argv and b"child" in argv:
            found.append(int(d))
    return found


def child(kind: str, i: int) -> None:
    from mpi4py import MPI

    from skiff.kernels.train.parallel.launched import parent, to_parent

    inter = parent()
    rank = MPI.COMM_WORLD.Get_rank()
    if kind in ("fail", "hang") and rank == 1:
        raise ValueError("rank 1: row 7 is unreadable")
    if kind == "silent":  # leaves cleanly without giving anything
        return
    if kind == "late":  # a bare gather, then a normal end (MPI_Finalize flushes)
        inter.gather({"rank": rank, "part": part(rank, i)}, root=0)
        return
    to_parent({"rank": rank, "part": part(rank, i)}, timeout=60)
    os._exit(0)  # at once, without MPI_Finalize


def parent(kind: str) -> None:
    from mpi4py import MPI

    from skiff.kernels.train.parallel import spawned
    from skiff.kernels.train.parallel.launched import launch_ranks

    # the drain after a clean end, shorter than the default 10 s: "late" needs it to outlast
    # its 1 s pause before the gather; "silent" sits it out whole (round 46 h3: 3 -> 1 s)
    spawned.DRAIN_S = 1.0 if kind == "silent" else 3.0
    runs = LAUNCHES if kind == "repeat" else 1
    for i in range(runs):
        # ranks as mpi4py advises (-m mpi4py: an uncaught error aborts the job; "hang": not)
        args = [str(HERE), "child", kind, str(i)]
        inter = launch_ranks(args if kind == "hang" else ["-m", "mpi4py", *args], np=2,
                             timeout=60)
        try:
            if kind == "late":  # the parent's gather starts after the ranks' job ended
                from skiff.kernels.train.parallel.launched import launched_process

                launched_process(inter).wait(timeout=60)

                def late_gather(inter=inter):
                    time.sleep(1.0)  # the job's end is seen first (polled every 0.2 s)
                    return inter.gather(None, root=MPI.ROOT)

                got = spawned.wait_for_ranks(inter, late_gather, timeout=60, what="gather")
            else:
                # "hang" sits its bound out whole (rank 1 never gives, whenever rank 0
                # joins): 3 s, not 8, ends it the same way (round 46 h3)
                got = spawned.gather_from_ranks(inter, timeout=3 if kind == "hang" else 60)
        except (spawned.SpawnedRanksFailed, TimeoutError) as exc:
            print(f"FAILED {i} {type(exc).__name__}: {exc}", flush=True)
            left, until = leftover_pids(), time.monotonic() + 10
            while left and time.monotonic() < until:
                time.sleep(0.25)
                left = leftover_pids()
            print("ALIVE " + json.dumps(left), flush=True)
            os._exit(3)
        print("GOT " + json.dumps({"i": i, "parts": got}), flush=True)
    os._exit(0)


def _run(kind: str, limit: int = 150):
    from skiff.jobs.process import find_mpiexec
    from skiff.kernels.backend import cpu_count

    if cpu_count() < 2:
        pytest.skip("2 ranks need 2 cores")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env["PATH"] = os.path.dirname(find_mpiexec()) + os.pathsep + env.get("PATH", "")
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"r33h6-{kind}-{os.getpid()}.log"
    with open(log, "w") as fh:  # a file, not a pipe: a rank left behind cannot hold it open
        proc = subprocess.run(["timeout", "-s", "KILL", str(limit), sys.executable, str(HERE),
                               "parent", kind], stdout=fh, stderr=subprocess.STDOUT, text=True,
                              env=env, cwd=ROOT)
    out = log.read_text()
    log.unlink()
    for pid in leftover_pids():  # the test's own ranks, should any be left: not kept running
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return proc.returncode, out, ""


def _got(out):
    from .mpi_util import results_in  # here: this file also runs as a script, outside pytest

    return results_in(out, "GOT ")


def _failed_and_alive(out):
    """The FAILED line and the ALIVE list, found where they start (another process's output
    shares the log: ``mpi_util.results_in``)."""
    from .mpi_util import json_after, line_after

    return line_after(out, "FAILED "), json_after(out, "ALIVE ")


@pytest.mark.mpi
def test_ranks_that_leave_at_once_after_to_parent_lose_nothing():
    code, out, err = _run("repeat")
    assert code == 0, f"exit {code}\n{(out + err)[-4000:]}"
    got = _got(out)
    assert [g["i"] for g in got] == list(range(LAUNCHES))
    for g in got:
        assert [p["rank"] for p in g["parts"]] == [0, 1]
        for p in g["parts"]:
            np.testing.assert_array_equal(p["part"], part(p["rank"], g["i"]))


@pytest.mark.mpi
def test_parts_still_on_their_way_after_a_clean_end_are_taken():
    # the job has ended (exit 0) before the parent's gather even starts
    code, out, err = _run("late")
    assert code == 0, f"exit {code}\n{(out + err)[-4000:]}"
    (g,) = _got(out)
    for p in g["parts"]:
        np.testing.assert_array_equal(p["part"], part(p["rank"], 0))


@pytest.mark.mpi
def test_a_failing_rank_is_said_at_once_and_no_rank_is_left():
    code, out, err = _run("fail")
    assert code == 3, f"exit {code}\n{(out + err)[-4000:]}"
    line, alive = _failed_and_alive(out)
    assert "SpawnedRanksFailed" in line and "exit status 0" not in line, line
    assert alive == []


@pytest.mark.mpi
def test_a_rank_that_raised_without_abort_is_ended_at_the_timeout():
    # rank 1 raises in a bare script: it waits in MPI_Finalize, rank 0 in the gather; the
    # parent's bound ends their job (before, both ranks were left running)
    code, out, err = _run("hang")
    assert code == 3, f"exit {code}\n{(out + err)[-4000:]}"
    line, alive = _failed_and_alive(out)
    assert "TimeoutError" in line and "their job was ended" in line, line
    assert alive == []


@pytest.mark.mpi
def test_ranks_that_end_cleanly_without_giving_are_said_after_the_drain():
    code, out, err = _run("silent")
    assert code == 3, f"exit {code}\n{(out + err)[-4000:]}"
    line, _ = _failed_and_alive(out)
    assert "exit status 0" in line and "did every rank join it" in line, line


if __name__ == "__main__":
    if sys.argv[1] == "child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        parent(sys.argv[2])


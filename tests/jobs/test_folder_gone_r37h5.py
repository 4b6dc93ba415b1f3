"""Round 37: a job's ranks leave when its run folder is removed (a test's temporary folder
deleted under a running job, an ``rm -rf`` of the runs folder). Rank 0 of a job waiting
without writing (a demo held before a step: a long direct solve, a model loading) ran on
for ever: its holder watchdog died writing its warning into the missing folder, and the
peers' watchdogs looked for pids in it. The oracle: the ranks' own pids, read before the
removal, and /proc."""

from __future__ import annotations

import os
import shutil
import signal

import pytest

from skiff.jobs import launch
from skiff.jobs.store import pid_alive
from tests.jobs.waiting import wait_for

pytestmark = pytest.mark.mpi


def _alive(pid: int) -> bool:
    """Alive and not a zombie (a dead rank its proxy has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return pid_alive(pid)


@pytest.mark.parametrize("np_", [1, 2])
def test_ranks_leave_when_the_run_folder_is_removed(runs_dir, tmp_path, np_):
    job = launch("demo", {"steps": 5, "sleep": 0.01, "hold_at": 2,
                          "hold_until": str(tmp_path / "never")}, runner="process", np=np_)
    ranks = job.run_dir / "ranks"
    pids = []
    try:
        wait_for(lambda: "holding until" in (job.run_dir / "events.jsonl").read_text(), 60,
                 "the job to wait before step 2")
        wait_for(lambda: len(list(ranks.glob("*.pid"))) == np_, 30, "every rank's pid")
        pids = [int((ranks / f"{r}.pid").read_text()) for r in range(np_)]
        assert all(map(_alive, pids))
        shutil.rmtree(job.run_dir)
        wait_for(lambda: not any(map(_alive, pids)), 30, "the ranks to leave")
        job.wait(30)
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert job.status == "failed" and "was removed while it ran" in job.error


def test_a_killed_mpiexec_is_named_not_a_rank(runs_dir, tmp_path):
    """``kill -9`` of the job's mpiexec: its proxies kill the ranks, which die of signal 9,
    and the job said "rank 0 (pid ...) killed by signal 9 (inferred ...)", a follower."""
    import json

    job = launch("demo", {"steps": 5, "sleep": 0.01, "hold_at": 2,
                          "hold_until": str(tmp_path / "never")}, runner="process", np=2)
    ranks = job.run_dir / "ranks"
    pids = []
    try:
        wait_for(lambda: "holding until" in (job.run_dir / "events.jsonl").read_text(), 60,
                 "the job to wait before step 2")
        wait_for(lambda: len(list(ranks.glob("*.pid"))) == 2, 30, "every rank's pid")
        pids = [int((ranks / f"{r}.pid").read_text()) for r in range(2)]
        mpiexec = json.loads((job.run_dir / "process.json").read_text())["pid"]
        os.kill(mpiexec, signal.SIGKILL)
        wait_for(lambda: not any(map(_alive, pids)), 30, "the ranks to go")
        job.wait(30)
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert job.refresh().status == "failed"
    assert f"mpiexec (pid {mpiexec}) was killed by signal 9 (SIGKILL)" in job.error

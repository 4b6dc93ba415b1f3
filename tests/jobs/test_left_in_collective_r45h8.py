"""Round 45 (h8): ranks left in a collective after the job's end are ended.

A SIGTERM'd rank of a job whose ranks do not agree on the stop (the demo's ``deaf_rank``:
a kind that reads no cancel, or reads it a step late): rank 1 writes the cancel, rank 0
reads it, writes "cancelled" and leaves, and rank 1 waits for it in the step's all-reduce
for ever, spinning a core, mpiexec with it (seen: 126 s later both alive, the job
"cancelled"); no cancel of the launcher's own was there to escalate. The process runner
now ends a job's process group that runs on ``FINAL_GRACE_S`` after its final status, and
a rank whose peers all ended and whose job's end is written leaves by itself (no launcher
watching). And the SIGTERM's ``DEFER_S`` fallback, tested at 2 real ranks.

Oracle: the operating system (are mpiexec's and both ranks' pids alive), the job's status
as rank 0 wrote it. No sleeps: bounded waits for each state."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from skiff.jobs import launch
from skiff.jobs import process as process_runner
from skiff.jobs.store import pid_alive, read_json
from tests.jobs.waiting import wait_for

pytestmark = pytest.mark.mpi


def _job_pids(run_dir: Path) -> dict | None:
    """mpiexec's and both ranks' pids, None until every file is written whole."""
    try:
        return {"mpiexec": int(read_json(run_dir / "process.json")["pid"]),
                **{f"rank {r}": int((run_dir / "ranks" / f"{r}.pid").read_text())
                   for r in range(2)}}
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _pids_of(run_dir: Path) -> dict:
    found = {}
    wait_for(lambda: found.update(_job_pids(run_dir) or {}) or found, 60, "the job's pids")
    return found



@pytest.mark.parametrize("side", ["launcher", "rank"])
def test_a_rank_left_waiting_after_the_end_is_stopped(runs_dir, monkeypatch, side):
    # the launcher's watch ends the group; with no launcher watching (its kernel gone while
    # a follower holds the job, a Slurm job), the rank's own watch of its peers leaves
    if side == "launcher":
        monkeypatch.setattr(process_runner, "FINAL_GRACE_S", 1.0, raising=False)
    else:
        monkeypatch.setattr(process_runner, "FINAL_GRACE_S", 3600.0, raising=False)
        monkeypatch.setenv("SKIFF_FINAL_GRACE_S", "1")  # read by the ranks
    job = launch("demo", {"steps": 10_000, "sleep": 0.02, "deaf_rank": 1}, np=2)
    ranks = job.run_dir / "ranks"
    wait_for(lambda: job.state.done >= 2, 60, "progress")
    pids = _pids_of(job.run_dir)
    assert all(pid_alive(pid) for pid in pids.values()), pids
    try:
        os.kill(pids["rank 1"], signal.SIGTERM)  # no job.cancel(): no escalation of its own
        wait_for(lambda: job.refresh().final, 60, "the job's end")
        assert job.status == "cancelled" and "SIGTERM (rank 1)" in (job.error or ""), job.error
        wait_for(lambda: not any(pid_alive(pid) for pid in pids.values()), 60,
                 f"every process of the job to exit ({pids})")
    finally:  # failing, nothing left spinning
        for pid in pids.values():
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert (ranks / "0.exit").exists() and not (ranks / "1.exit").exists()  # 1 never left
    job.wait(30)
    assert job.status == "cancelled" and "SIGTERM (rank 1)" in job.error  # as rank 0 said
    if side == "launcher":
        assert "left waiting for peers that stopped" in str(job.logs), str(job.logs)[-800:]
    else:
        assert (ranks / "1.left").read_text() == "ended"


def test_defer_fallback_at_two_ranks_of_a_kind_that_never_asks(runs_dir, monkeypatch):
    # round 44 h8's DEFER_S, tested in one process by h15; here at 2 real ranks: a kind
    # that never asks should_stop (a direct solve, a model loading), rank 1 SIGTERM'd. The
    # stop is left to the kind for DEFER_S, which never takes it: then JobCancelled is
    # raised in rank 1, and the job ends "stopped by SIGTERM (rank 1)", nothing left running
    monkeypatch.setenv("SKIFF_DEFER_S", "1")
    job = launch("demo", {"steps": 10_000, "sleep": 0.02, "never_asks": True}, np=2)
    wait_for(lambda: job.state.done >= 2, 60, "progress")
    pids = _pids_of(job.run_dir)
    try:
        termed = time.monotonic()
        os.kill(pids["rank 1"], signal.SIGTERM)
        wait_for(lambda: job.refresh().final, 60, "the job's end")
        assert time.monotonic() - termed >= 1.0  # not before DEFER_S: it was deferred
        assert job.status == "cancelled" and "SIGTERM (rank 1)" in (job.error or ""), job.error
        assert (job.run_dir / "cancel").read_text().split() == ["term", "1"]
        rank1 = (job.run_dir / "logs" / "rank1.log").read_text()
        assert "at the step its ranks agree on" in rank1, rank1  # the deferral's note
        wait_for(lambda: not any(pid_alive(pid) for pid in pids.values()), 60,
                 f"every process of the job to exit ({pids})")
    finally:
        for pid in pids.values():
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


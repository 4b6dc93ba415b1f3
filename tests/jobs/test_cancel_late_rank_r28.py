"""Round 28: ``test_cancel_stops_all_ranks`` failed now and then under load. Each rank reads
the cancel on its own; when rank 0 saw it one step before rank 1, rank 0 wrote 'cancelled'
and left, rank 1 waited in the step's all-reduce for ever, and the cancel's escalation,
which stopped waiting once the status was final, signalled nothing: mpiexec and rank 1
stayed (the test's job.wait took its whole 20 s, the processes were there 30 s later). The
escalation now waits for the job's processes to be gone. The oracle: the operating system
(are the pids of mpiexec and both ranks alive)."""

from __future__ import annotations

import pytest

from skiff.jobs import launch
from skiff.jobs.store import pid_alive, read_json
from tests.jobs.waiting import wait_for

pytestmark = pytest.mark.mpi


def test_a_rank_left_in_a_collective_by_a_cancel_is_stopped():
    job = launch("demo", {"steps": 10_000, "sleep": 0.02, "deaf_rank": 1}, np=2)
    ranks = job.run_dir / "ranks"
    wait_for(lambda: job.state.done >= 2, 60, "progress")
    wait_for(lambda: all((ranks / f"{r}.pid").exists() for r in range(2)), 30, "rank pids")
    pids = {"mpiexec": read_json(job.run_dir / "process.json")["pid"],
            **{f"rank {r}": int((ranks / f"{r}.pid").read_text()) for r in range(2)}}
    assert all(pid_alive(pid) for pid in pids.values()), pids
    job.cancel(grace=1)
    job.wait(60)
    assert job.status == "cancelled"
    assert (ranks / "0.exit").exists() and not (ranks / "1.exit").exists()  # 1 never left
    wait_for(lambda: not any(pid_alive(pid) for pid in pids.values()), 30,
             f"every process of the job to exit ({pids})")

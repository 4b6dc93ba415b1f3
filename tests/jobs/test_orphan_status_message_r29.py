"""Round 29, as a terminal user whose ``python -m skiff train ... --runner process`` was
killed (``kill -9``): ``jobs`` listed the training "cancelled", like a user's cancel, and
``jobs show`` said "stopped early: cancelled"; why (its launcher gone, nobody holding it)
was only in a log line. The final status now says it. The oracle: the events the worker
wrote (its own final status, rank 0) and the launcher's death we caused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from skiff.jobs import Job, read_events
from skiff.jobs.store import pid_alive
from tests.jobs.waiting import wait_for

pytestmark = pytest.mark.mpi

LAUNCH_AND_STAY = (
    "import time\n"
    "from skiff.jobs import launch\n"
    "job = launch('demo', {'steps': 100000, 'sleep': 0.02}, runner='process')\n"
    "print(job.id, flush=True)\n"
    "time.sleep(120)\n")


def test_a_job_stopped_for_want_of_a_holder_says_why(runs_dir):
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCH_AND_STAY], stdout=subprocess.PIPE,
                                text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    try:
        job = Job(runs_dir / launcher.stdout.readline().strip())
        wait_for(lambda: job.refresh().done >= 2, 60, "the job to run")
        rank0 = int((job.run_dir / "ranks" / "0.pid").read_text())
    finally:
        launcher.send_signal(signal.SIGKILL)  # no atexit, no hand-over to a holder
        launcher.wait()
    wait_for(lambda: not pid_alive(rank0), 30, "the rank to stop")
    wait_for(lambda: job.refresh().final, 30, "a final status")
    assert job.status == "cancelled"
    final = [e for e in read_events(job.run_dir / "events.jsonl") if e["type"] == "status"][-1]
    assert final["rank"] == 0 and "the launcher is gone" in str(final.get("message"))
    assert "the launcher is gone" in str(job.error)  # what a listing and the repr show

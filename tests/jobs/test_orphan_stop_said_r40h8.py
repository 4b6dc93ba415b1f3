"""Round 40: a process job whose launcher died (a notebook's kernel restarted, its terminal
closed) with no one following it is stopped by its own watchdog, which writes the run folder's
``cancel``. A kind that stops by returning (training, the demo) ended "cancelled" with why
("the launcher is gone and no watcher holds the job"); a kind that stops by raising
``JobCancelled`` at that cancel (a solve, as ``%solve --np 2`` from a kernel that was restarted)
ended "cancelled by request": no one had asked. The oracle: no cancel was asked (the test
kills the launcher and never calls ``jobs cancel``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from skiff.jobs import Job
from skiff.jobs.process import find_mpiexec
from skiff.jobs.store import pid_alive
from tests.jobs.waiting import wait_for

LAUNCH_AND_STAY = (
    "import sys, time\n"
    "from skiff.jobs import launch\n"
    "job = launch('demo', {'steps': 100000, 'sleep': 0.02, 'raise_on_stop': True},"
    " runner='process')\n"
    "print(job.id, flush=True)\n"
    "time.sleep(120)\n")


@pytest.mark.mpi
def test_a_job_that_raises_at_the_orphan_stop_says_why(runs_dir):
    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCH_AND_STAY],
                                stdout=subprocess.PIPE, text=True)
    try:
        job = Job(runs_dir / launcher.stdout.readline().strip())
        wait_for(lambda: job.refresh().done >= 2, 60, "the job to run")
        rank = int((job.run_dir / "ranks" / "0.pid").read_text())
    finally:
        launcher.send_signal(signal.SIGKILL)  # no atexit, no hand-over
        launcher.wait()
    wait_for(lambda: not pid_alive(rank), 30, "the rank to stop")
    wait_for(lambda: job.refresh().final, 10, "the job's end")
    assert job.status == "cancelled"
    assert "the launcher is gone and no watcher holds the job" in job.error, job.error
    assert "by request" not in job.error
    statuses = [e.get("message") for e in job.events() if e.get("type") == "status"
                and e.get("status") == "cancelled"]
    assert statuses and "by request" not in json.dumps(statuses)

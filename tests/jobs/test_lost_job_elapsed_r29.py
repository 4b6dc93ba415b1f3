"""Round 29, as a user whose kernel was killed (``kill -9``) 17 s into a training: ``jobs``
listed it failed, as it should, but with an elapsed time that grew with the clock ("16.8 s",
then "7 min 57 s" eight minutes later): each reader ended it at the moment it noticed. It
now ended when it was last heard of. The oracle: the events file's modification time, and
two readers at different moments agreeing."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from skiff.jobs import Job
from tests.jobs.waiting import wait_for

SCRIPT = ("from skiff.jobs import launch; import time\n"
          "j = launch('demo', {'steps': 100000, 'sleep': 0.01})\n"
          "print(j.run_dir, flush=True)\n"
          "time.sleep(300)\n")


def test_a_lost_job_ended_when_last_heard_of(runs_dir):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    try:
        run_dir = proc.stdout.readline().strip()
        job = Job.load(run_dir)
        wait_for(lambda: job.refresh().done >= 3, 60, "progress")
    finally:
        proc.kill()  # SIGKILL: no final event
        proc.wait(30)
    job = Job.load(run_dir)
    job.wait(30)
    assert job.status == "failed" and job.state.inferred
    heard = os.stat(os.path.join(run_dir, "events.jsonl")).st_mtime
    first = job.summary()["elapsed_s"]
    assert abs(first - (heard - job.state.started)) < 0.01
    time.sleep(1.0)  # a later reader (a listing a while after): the same elapsed time
    later = Job.load(run_dir)
    later.wait(30)
    assert later.summary()["elapsed_s"] == first

"""Round 29, as a user whose kernel was killed (``kill -9``) before a training's first
checkpoint: ``python -m skiff jobs resume ID`` said it resumed, then trained all 200,000
steps again from step 0 (7 minutes), said only in its summary ("no checkpoint ..., so it
started from step 0"). It is now refused in one line that gives the command to train again.
The oracle: the checkpoints folder on disk, and the run folders (no new one)."""

from __future__ import annotations

import os
import subprocess
import sys

from skiff.cli import main
from skiff.jobs import Job
from skiff.jobs.store import list_run_dirs
from tests.jobs.waiting import wait_for

SCRIPT = ("from skiff.jobs import submit; import time\n"
          "j, _ = submit('train', 'mlp --steps 1000000', front='cli')\n"
          "print(j.run_dir, flush=True)\n"
          "time.sleep(300)\n")


def test_resume_of_a_training_with_no_checkpoint_is_refused(runs_dir, capsys):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    try:
        run_dir = proc.stdout.readline().strip()
        job = Job.load(run_dir)
        wait_for(lambda: job.refresh().done >= 3, 60, "progress")
    finally:
        proc.kill()  # SIGKILL before any checkpoint (the first is at the end)
        proc.wait(30)
    job = Job.load(run_dir)
    job.wait(30)
    assert job.status == "failed"
    folder = os.path.join(run_dir, "checkpoints")
    assert not os.path.isdir(folder)  # the trainer makes it at its first checkpoint
    capsys.readouterr()
    assert main(["jobs", "resume", job.id]) == 2
    err = capsys.readouterr().err
    assert "wrote no checkpoint" in err and "nothing to resume from" in err
    assert "to train again from the start:" in err
    assert [p.name for p in list_run_dirs(runs_dir)] == [job.id]  # nothing started

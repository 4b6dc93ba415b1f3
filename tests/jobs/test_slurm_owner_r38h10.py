"""Round 38 (h10), the README's Slurm block as a user: ``launch_slurm(...)`` writes the
script (and submits it), then the process that wrote it exits, and ``%jobs`` listed the job
"failed: the kernel process that ran this job (pid N) has exited without a final event" at
once, queued or not (the writer was taken for the job's owner). Slurm runs it, elsewhere:
it is queued until its own events say otherwise. The oracle: the script's worker run here
afterwards, whose final event the listing then reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.jobs import Job

ROOT = Path(__file__).resolve().parents[2]


def test_a_written_slurm_job_stays_queued_after_its_writer_exits(runs_dir):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = ("from skiff.jobs.slurm import launch_slurm; print(launch_slurm('demo', "
            "{'steps': 2, 'sleep': 0.0}, nodes=1)['run_dir'])")
    run_dir = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, timeout=120).stdout.strip()
    assert Job.load(run_dir, metrics=False).status == "queued"
    followed = Job.load(run_dir)  # followed from here, as %jobs show does
    assert followed.refresh().status == "queued" and not followed.refresh().final
    # what srun would run on the allocation, one rank, here
    subprocess.run([sys.executable, "-m", "skiff.jobs.worker", run_dir], env=env,
                   capture_output=True, check=True, timeout=120)
    job = Job.load(run_dir, metrics=False)
    assert job.status == "done" and job.result["steps"] == 2


def test_a_written_slurm_job_is_cancelled_and_removed(runs_dir):
    """Queued (never started), the cancel is its end: nobody else would write one, and
    ``jobs rm`` refused it as "still queued"."""
    from skiff.cli import OK, main
    from skiff.jobs.slurm import launch_slurm

    run_dir = Path(launch_slurm("demo", {"steps": 2}, nodes=1)["run_dir"])
    job = Job.load(run_dir, metrics=False)
    assert job.cancel() and job.refresh().status == "cancelled"
    assert "before it was submitted to Slurm" in job.error and (run_dir / "cancel").exists()
    assert main(["jobs", "rm", job.id]) == OK and not run_dir.exists()


def test_a_script_sbatch_refuses_is_failed_and_one_without_sbatch_queued(tmp_path, monkeypatch,
                                                                          runs_dir):
    from skiff.jobs.slurm import SlurmError, launch_slurm

    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch: the script is to be submitted
    with pytest.raises(SlurmError, match="submit .* there yourself"):
        launch_slurm("demo", {}, nodes=1, submit=True)
    (job_dir,) = list(runs_dir.iterdir())
    assert Job.load(job_dir, metrics=False).status == "queued"
    sbatch = tmp_path / "sbatch"  # one that refuses every script
    sbatch.write_text("#!/bin/sh\necho 'sbatch: error: invalid partition' >&2\nexit 1\n")
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")
    with pytest.raises(SlurmError, match="invalid partition"):
        launch_slurm("demo", {}, nodes=1, submit=True, mpi="none")
    (refused,) = [p for p in runs_dir.iterdir() if p != job_dir]
    job = Job.load(refused, metrics=False)
    assert job.status == "failed" and "not submitted: sbatch refused" in job.error

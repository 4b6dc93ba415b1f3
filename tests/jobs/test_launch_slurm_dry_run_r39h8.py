"""Round 39 (h8): ``launch_slurm(..., dry_run=True)`` leaves nothing in the runs root.

It made a run folder there (a ``queued`` job no one would run, in every ``%jobs`` and the
sidebar), and without sbatch raised after making it; ``--launcher slurm --dry-run`` in every
front leaves none. The dry run's folder and script are in a temporary folder; the script
still runs the job as an allocation would (the oracle: the worker's own final event there).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.jobs import Job, list_jobs
from skiff.jobs.slurm import SlurmError, launch_slurm

ROOT = Path(__file__).resolve().parents[2]


def _sbatch(folder: Path, *, refuse: bool = False) -> Path:
    """An sbatch that records its arguments and checks the script parses (or refuses)."""
    folder.mkdir(exist_ok=True)
    body = ("echo 'sbatch: error: invalid partition' >&2\nexit 1\n" if refuse else
            'bash -n "${@: -1}" && echo "sbatch: Job 1 to start at now"\n')
    (folder / "sbatch").write_text(f'#!/bin/bash\necho "$@" > "$(dirname "$0")/args"\n{body}')
    (folder / "sbatch").chmod(0o755)
    return folder


def test_a_dry_run_without_sbatch_writes_the_script_outside_the_runs_root(tmp_path,
                                                                          monkeypatch,
                                                                          runs_dir):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no sbatch, no srun
    out = launch_slurm("demo", {"steps": 2, "sleep": 0.0}, nodes=1, dry_run=True)
    assert out["dry_run"] and not out["submitted"] and out["slurm_job_id"] is None
    assert out["output"] == ""  # nothing checked it
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
    assert list_jobs() == []
    script, run_dir = Path(out["script"]), Path(out["run_dir"])
    assert script.is_file() and run_dir == script.parent
    assert runs_dir not in run_dir.parents
    assert str(run_dir) in script.read_text()  # the script runs the folder it sits in
    # what srun would run on the allocation (one rank), here: the job ends done
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=os.defpath)
    subprocess.run([sys.executable, "-m", "skiff.jobs.worker", str(run_dir)], env=env,
                   capture_output=True, check=True, timeout=120)
    job = Job.load(run_dir, metrics=False)
    assert job.status == "done" and job.result["steps"] == 2
    assert list_jobs() == []  # still nothing in the runs root


def test_a_dry_run_is_checked_by_sbatch_and_never_queued(tmp_path, monkeypatch, runs_dir):
    bin_dir = _sbatch(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    out = launch_slurm("demo", {"steps": 2}, nodes=1, mpi="none", dry_run=True)
    assert (bin_dir / "args").read_text().split() == ["--test-only", out["script"]]
    assert "Job 1 to start" in out["output"] and not out["submitted"]
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_a_refused_dry_run_says_so_and_leaves_nothing_in_the_runs_root(tmp_path, monkeypatch,
                                                                       runs_dir):
    bin_dir = _sbatch(tmp_path / "bin", refuse=True)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    with pytest.raises(SlurmError, match="invalid partition") as err:
        launch_slurm("demo", {}, nodes=1, mpi="none", dry_run=True)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
    named = str(err.value).split("sbatch refused ", 1)[1].split(":", 1)[0]
    assert Path(named).is_file()  # the script the message names is there to read

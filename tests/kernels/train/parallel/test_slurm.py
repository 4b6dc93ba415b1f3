"""The Slurm launcher: the sbatch script's text, sbatch's dry run, and the script itself run
here with ``srun`` standing in as ``mpiexec`` (2 ranks of the demo job, to the end)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.jobs import Job
from skiff.jobs.slurm import SlurmError, launch_slurm, sbatch_script


def test_script_text(tmp_path):
    text = sbatch_script(tmp_path, nodes=2, gpus_per_node=4, cpus_per_task=8,
                         partition="gpu", time_limit="02:00:00")
    assert text.startswith("#!/bin/bash\n")
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4",
                 "#SBATCH --gpus-per-node=4", "#SBATCH --cpus-per-task=8",
                 "#SBATCH --partition=gpu", "#SBATCH --time=02:00:00"):
        assert line in text.splitlines()
    last = [ln for ln in text.splitlines() if ln.startswith("srun ")][0]
    assert last.endswith(f"-m skiff.jobs.worker {tmp_path.resolve()}")
    assert "OPENBLAS_NUM_THREADS=$THREADS" in text
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    with pytest.raises(ValueError, match="nodes must be a positive integer, got 0"):
        sbatch_script(tmp_path, nodes=0)


def _fake_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mpiexec = Path(sys.executable).parent / "mpiexec"
    # srun: run the command on SLURM_NTASKS ranks with this machine's mpiexec
    (bin_dir / "srun").write_text(f'#!/bin/bash\nshift\nexec {mpiexec} -n "$SLURM_NTASKS" '
                                  '"$@"\n')
    # sbatch: record the arguments, check the script parses
    (bin_dir / "sbatch").write_text('#!/bin/bash\necho "$@" > "$(dirname "$0")/args"\n'
                                    'bash -n "${@: -1}" && echo "sbatch: would run"\n')
    for f in ("srun", "sbatch"):
        (bin_dir / f).chmod(0o755)
    return bin_dir


def test_dry_run_and_local_run_of_the_script(tmp_path, monkeypatch, runs_dir):
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path)) + os.pathsep + os.environ["PATH"])
    out = launch_slurm("demo", {"steps": 3, "sleep": 0.0}, nodes=1, tasks_per_node=2,
                       dry_run=True)
    assert "would run" in out["output"] and not out["submitted"]
    assert (tmp_path / "bin" / "args").read_text().startswith("--test-only ")
    # run the very script here: srun -> mpiexec -n 2, as a one-node allocation would
    env = dict(os.environ, SLURM_NTASKS="2", SLURM_CPUS_PER_TASK="1",
               PYTHONPATH=str(Path(__file__).parents[4]))
    subprocess.run(["bash", out["script"]], env=env, check=True, timeout=60,
                   capture_output=True)
    job = Job(out["run_dir"])
    assert job.status == "done", job.error
    assert job.result["ranks"] == 2 and job.result["steps"] == 3


def test_submit_without_sbatch_says_so(tmp_path, monkeypatch, runs_dir):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SlurmError, match="sbatch is not on PATH"):
        launch_slurm("demo", {}, nodes=1, submit=True)

"""Round 39: ``--np N --launcher slurm`` on nodes without GPUs starts N ranks (the script asks
``--ntasks-per-node=N/nodes``); it was dropped without a word and the job ran on one rank a
node. An ``--np`` the nodes do not divide, or one other than nodes x GPUs, is refused in one
line. Oracle: the sbatch script's own directives, read back."""

import json
import re
import subprocess
import sys

import pytest

from skiff.jobs import launch


def _directives(script_text: str) -> dict:
    return dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)", script_text, re.M))


def _script(submission) -> str:
    script = submission["script"]
    return open(script).read() if not script.lstrip().startswith("#!") else script


def test_cli_dry_run_asks_for_np_ranks(tmp_path):
    out = subprocess.run([sys.executable, "-m", "skiff", "solve", "poisson", "--grid", "32x32",
                          "--np", "4", "--nodes", "2", "--launcher", "slurm", "--dry-run",
                          "--json"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["np"] == 4
    d = _directives(_script(doc["submission"]))
    assert (d["nodes"], d["ntasks-per-node"]) == ("2", "2")


def test_launch_api_dry_run_and_refusals(runs_dir):
    job = launch("demo", {"steps": 1, "sleep": 0}, np=2, launcher="slurm", dry_run=True)
    d = _directives(_script(job.submission))
    assert (d["nodes"], d["ntasks-per-node"]) == ("1", "2")
    assert job.meta["np"] == 2
    with pytest.raises(ValueError, match="give a multiple of 2"):
        launch("demo", {"steps": 1}, np=3, nodes=2, launcher="slurm", dry_run=True)
    with pytest.raises(ValueError, match="one rank a GPU"):
        launch("demo", {"steps": 1}, np=2, gpus_per_node=4, launcher="slurm", dry_run=True)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())

"""``--launcher slurm`` on %train / %%train / python -m skiff train."""

import json
import os
import subprocess
import sys

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import list_jobs


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


@pytest.fixture
def no_sbatch(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # a dry run's script goes there


@pytest.fixture
def fake_sbatch(monkeypatch, tmp_path):
    """A stand-in sbatch that records its arguments and answers like `sbatch --parsable`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "sbatch.log"
    script = bin_dir / "sbatch"
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\necho '4242;cluster'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ["PATH"])
    return log


def test_dry_run_writes_the_script_without_queueing(shell, no_sbatch, runs_dir):
    doc = shell.run_line_magic(
        "train", "mlp --steps 5 --launcher slurm --nodes 2 --gpus-per-node 4 --dry-run")
    sub = doc["submission"]
    text = open(sub["script"]).read()
    assert "#SBATCH --nodes=2" in text and "#SBATCH --gpus-per-node=4" in text
    assert "#SBATCH --ntasks-per-node=4" in text
    assert f"-m skiff.jobs.worker {sub['run_dir']}" in text and "srun" in text
    assert doc["np"] == 8 and doc["config"]["model"] == "mlp" and doc["config"]["steps"] == 5
    assert sub["submitted"] is False
    # a dry run makes no run folder (it left a 'cancelled' job in every listing)
    assert not os.path.exists(sub["run_dir"]) and list_jobs() == []


def test_python_launch_dry_run_leaves_no_run_folder(no_sbatch, runs_dir):
    from skiff.jobs import launch

    job = launch("train", {"model": "mlp", "steps": 2}, launcher="slurm", nodes=2,
                 dry_run=True)
    assert job.status == "cancelled" and job.submission["submitted"] is False
    assert "#SBATCH --nodes=2" in open(job.submission["script"]).read()
    assert list_jobs() == [] and not (runs_dir / job.id).exists()
    assert job.config["steps"] == 2  # its config is kept beside the script, outside the runs
    assert (job.run_dir / "config.json").is_file() and runs_dir not in job.run_dir.parents


def test_submit_goes_through_sbatch(shell, fake_sbatch):
    job = shell.run_cell_magic("train", "--launcher slurm --nodes 1 --gpus-per-node 2",
                               "from skiff.models import MLP\nmodel = MLP(2, 1)\n"
                               "dataset = None\n")
    assert job.submission["slurm_job_id"] == "4242"
    assert "--parsable" in fake_sbatch.read_text()
    assert job.config["source"].startswith("from skiff.models import MLP")
    assert job.status == "queued"  # until the worker starts on the cluster


def test_missing_sbatch_is_a_one_line_usage_error(shell, no_sbatch):
    with pytest.raises(UsageError, match="sbatch is not on PATH"):
        shell.run_line_magic("train", "mlp --launcher slurm")


def test_bad_cluster_options(shell):
    with pytest.raises(UsageError, match="expected a positive integer, got '0'"):
        shell.run_line_magic("train", "mlp --launcher slurm --nodes 0")
    with pytest.raises(UsageError, match="invalid choice: 'k8s'"):
        shell.run_line_magic("train", "mlp --launcher k8s")


def test_cli_dry_run_json(tmp_path, runs_dir):
    env = {**os.environ, "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "skiff", "train", "gpt-mini", "--steps", "3",
                          "--launcher", "slurm", "--nodes", "2", "--dry-run", "--json"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["submission"]["submitted"] is False
    assert "#SBATCH --nodes=2" in open(doc["submission"]["script"]).read()
    assert list_jobs() == [] and not os.path.exists(doc["submission"]["run_dir"])


def test_magic_slurm_dry_run_is_checked_by_sbatch_test_only(shell, fake_sbatch, runs_dir,
                                                            monkeypatch, tmp_path):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    doc = shell.run_line_magic("train", "mlp --launcher slurm --nodes 2 --dry-run")
    args = fake_sbatch.read_text().split()
    assert args[0] == "--test-only" and args[1] == doc["submission"]["script"]
    assert doc["submission"]["output"] == "4242;cluster" and list_jobs() == []
    assert "sbatch --test-only: 4242;cluster" in repr(doc)


def test_a_script_sbatch_refuses_is_a_usage_error(shell, runs_dir, monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'invalid partition' >&2\nexit 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    with pytest.raises(UsageError, match="sbatch refused .*invalid partition") as err:
        shell.run_line_magic("train", "mlp --launcher slurm --dry-run")
    assert list_jobs() == []
    # the script it refused stays where the message says, for the user to read
    script = str(err.value).split("sbatch refused ", 1)[1].split(": ", 1)[0]
    assert "#SBATCH --nodes=1" in open(script).read()
    with pytest.raises(ValueError, match="sbatch refused"):  # skiff.launch: the same
        from skiff.jobs import launch

        launch("train", {"model": "mlp", "steps": 1}, launcher="slurm", dry_run=True)
    assert list_jobs() == []


def test_a_job_sbatch_refuses_is_recorded_failed_not_queued(shell, runs_dir, monkeypatch,
                                                           tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'QOSMaxNodePerJobLimit' >&2\nexit 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + "/usr/bin:/bin")
    with pytest.raises(UsageError, match="QOSMaxNodePerJobLimit"):
        shell.run_line_magic("train", "mlp --launcher slurm --nodes 2")
    [job] = list_jobs()  # the listing said 'queued' for ever: sbatch's answer is its error
    assert job.status == "failed" and "QOSMaxNodePerJobLimit" in job.error

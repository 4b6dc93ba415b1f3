"""The Slurm launcher: the sbatch script's text (quoted paths, the MPI plugin), sbatch's dry
run, the site's ``srun --mpi=list`` checked at submission, and the script itself run here twice:
with ``srun`` standing in as ``mpiexec`` (2 ranks of the demo job, to the end), and with an
``srun`` that, like ``srun --mpi=none``, only sets Slurm's variables and starts 2 unconnected
processes (the job must fail with one clear message, not run twice alone)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.jobs import Job
from skiff.jobs.slurm import SlurmError, check_mpi_plugin, launch_slurm, sbatch_script


def test_script_text(tmp_path):
    text = sbatch_script(tmp_path, nodes=2, gpus_per_node=4, cpus_per_task=8,
                         partition="gpu", time_limit="02:00:00")
    assert text.startswith("#!/bin/bash\n")
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4",
                 "#SBATCH --gpus-per-node=4", "#SBATCH --cpus-per-task=8",
                 "#SBATCH --partition=gpu", "#SBATCH --time=02:00:00"):
        assert line in text.splitlines()
    last = [ln for ln in text.splitlines() if ln.startswith("srun ")][0]
    assert last.startswith("srun --mpi=pmi2 ")  # the ranks know each other (not --mpi=none)
    assert last.endswith(f"-m skiff.jobs.worker {tmp_path.resolve()}")
    assert f'#SBATCH --output="{tmp_path.resolve()}/logs/slurm-%j.log"' in text.splitlines()
    assert "OPENBLAS_NUM_THREADS=$THREADS" in text
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    with pytest.raises(ValueError, match="nodes must be a positive integer, got 0"):
        sbatch_script(tmp_path, nodes=0)


def test_odd_paths_are_quoted_or_refused(tmp_path, monkeypatch):
    odd = tmp_path / "my runs; touch PWNED $(id) 50%"
    odd.mkdir()
    monkeypatch.chdir(odd)
    text = sbatch_script(odd, nodes=1, mpi="pmix")
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    cd = [ln for ln in text.splitlines() if ln.startswith("cd ")][0]
    assert shlex.split(cd) == ["cd", str(odd.resolve())]
    srun = shlex.split([ln for ln in text.splitlines() if ln.startswith("srun ")][0])
    assert srun[1] == "--mpi=pmix" and srun[-1] == str(odd.resolve())
    # sbatch expands %j in --output; the folder's own % is written as sbatch's literal %%
    assert (f'#SBATCH --output="{str(odd.resolve()).replace("%", "%%")}/logs/slurm-%j.log"'
            in text.splitlines())
    # a newline would end the #SBATCH line and make the rest a command: refused, as is a "
    for name in ("run\nrm -rf ~", 'run"x'):
        bad = tmp_path / name
        bad.mkdir()
        with pytest.raises(SlurmError, match="run folder"):
            sbatch_script(bad, nodes=1)
    with pytest.raises(SlurmError, match="Python interpreter"):
        sbatch_script(tmp_path, nodes=1, python="/usr/bin/python3\nreboot")
    for option, value in (("mpi", "pmi2 ; reboot"), ("partition", "gpu\n#SBATCH --x"),
                          ("job_name", "a b")):
        with pytest.raises(SlurmError, match=option):
            sbatch_script(tmp_path, nodes=1, **{option: value})


# `srun --mpi=list` as Slurm 22.05+ and as Slurm <= 21.08 print it
LIST_NEW = ("MPI plugin types are...\n\tnone\n\tcray_shasta\n\tpmi2\n\tpmix\n"
            "specific pmix plugin versions available: pmix_v4,pmix_v5\n")
LIST_OLD = "srun: MPI types are...\nsrun: none\nsrun: pmi2\n"


def _srun_listing(bin_dir: Path, listing: str) -> Path:
    srun = bin_dir / "srun"
    srun.write_text(f"#!/bin/bash\nprintf {shlex.quote(listing)}\n")
    srun.chmod(0o755)
    return srun


@pytest.mark.parametrize("listing,offered", [(LIST_NEW, "none, cray_shasta, pmi2, pmix, "
                                              "pmix_v4, pmix_v5"), (LIST_OLD, "none, pmi2")])
def test_the_plugin_must_be_one_srun_offers(tmp_path, listing, offered):
    srun = str(_srun_listing(tmp_path, listing))
    assert check_mpi_plugin("pmi2", srun) == "pmi2"
    with pytest.raises(SlurmError, match=f"'pmix_v3'.*offers {offered}; choose"):
        check_mpi_plugin("pmix_v3", srun)


def test_submission_checks_the_plugin_before_sbatch(tmp_path, monkeypatch, runs_dir):
    bin_dir = _fake_bin(tmp_path)
    _srun_listing(bin_dir, LIST_OLD)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ["PATH"])
    with pytest.raises(SlurmError, match="does not offer the MPI plugin 'pmix': "):
        launch_slurm("demo", {}, nodes=1, submit=True, mpi="pmix")
    assert not (bin_dir / "args").exists()  # sbatch was never asked


def _fake_bin(tmp_path: Path, *, connected: bool = True) -> Path:
    """``srun`` and ``sbatch`` for this machine. ``connected``: srun runs the command on
    SLURM_NTASKS ranks with this machine's mpiexec (as ``--mpi=pmi2`` connects them); else it
    starts SLURM_NTASKS plain processes that know only Slurm's variables (``--mpi=none``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mpiexec = Path(sys.executable).parent / "mpiexec"
    head = ('#!/bin/bash\nif [ "$1" = "--mpi=list" ]; then printf "srun: MPI types are...\\n'
            'srun: none\\nsrun: pmi2\\n"; exit 0; fi\n'
            'while [[ "$1" == --* ]]; do shift; done\n')
    if connected:
        body = f'exec {mpiexec} -n "$SLURM_NTASKS" "$@"\n'
    else:
        body = ('pids=()\nfor ((r = 0; r < SLURM_NTASKS; r++)); do\n'
                '  SLURM_PROCID=$r SLURM_LOCALID=$r "$@" & pids+=($!)\ndone\n'
                'code=0\nfor p in "${pids[@]}"; do wait "$p" || code=$?; done\nexit $code\n')
    (bin_dir / "srun").write_text(head + body)
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


def test_unconnected_srun_ranks_stop_with_one_message(tmp_path, monkeypatch, runs_dir):
    """Two processes with SLURM_PROCID 0 and 1 and no MPI process manager: each would see a
    one-rank MPI world and run the whole job alone (the demo job then reports ranks=1 and
    "done"). Every rank must instead stop, naming the cause and the fix."""
    monkeypatch.setenv("PATH", str(_fake_bin(tmp_path, connected=False)) + os.pathsep
                       + os.environ["PATH"])
    out = launch_slurm("demo", {"steps": 3, "sleep": 0.0}, nodes=1, tasks_per_node=2)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI", "OMPI_", "MPI_"))}
    env.update(SLURM_NTASKS="2", SLURM_NTASKS_PER_NODE="2", SLURM_CPUS_PER_TASK="1",
               PYTHONPATH=str(Path(__file__).parents[4]))
    proc = subprocess.run(["bash", out["script"]], env=env, timeout=60, capture_output=True,
                          text=True)
    assert proc.returncode != 0
    job = Job(out["run_dir"])
    assert job.status == "failed"
    assert "MPI sees a world of 1" in job.error and "srun --mpi=pmi2" in job.error, job.error
    assert job.result is None  # nobody trained alone and wrote a result
    for rank in (0, 1):  # each rank stopped before the job's code ran
        log = (Path(out["run_dir"]) / "logs" / f"traceback-rank{rank}.txt").read_text()
        assert f"rank {rank} of 2 by Slurm" in log


def test_submit_without_sbatch_says_so(tmp_path, monkeypatch, runs_dir):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SlurmError, match="sbatch is not on PATH"):
        launch_slurm("demo", {}, nodes=1, submit=True)

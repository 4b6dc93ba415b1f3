"""A user's script under ``mpiexec -n 2`` (or spawned from a notebook with
``MPI.COMM_SELF.Spawn``) calling ``Trainer(model, strategy="auto").train(data)`` with no
reporter trains data-parallel over the two ranks, equal to PyTorch on the whole batch.

Found by a user: the Trainer took the job's size from its reporter only, a default
NullReporter said one rank, and each rank trained the whole model alone on the whole data
(the same run twice; with a checkpoint folder, two processes writing one file). The oracle
is torch (float64 AdamW, same first weights and batch order), for an MLP whose last batch
is one row (one rank holds it, the other runs a stand-in row) and a CNN. With verbose=True
the epoch lines come once, from rank 0 (every rank printed them). ``train`` called a second
time under ZeRO continues with its AdamW moments, as torch stepping one optimizer (they
started afresh: the new flat shard got a new optimizer).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .mpi_util import HERE, ROOT, mpiexec, run_mpi

pytest.importorskip("torch")


def _check(results, kinds=("mlp", "cnn")):
    assert [r["rank"] for r in results] == [0, 1]
    for res in results:
        for kind in kinds:
            got = res[kind]
            assert got["world"] == 2, got  # was 1: each rank trained alone
            assert got["strategy"] != "single", got
            assert got["steps"] == got["torch_steps"], got
            assert got["loss"] < 1e-5, got
            assert got["weights"] < 1e-5, got


@pytest.mark.mpi
def test_auto_under_mpiexec_trains_over_the_ranks_as_torch_on_the_whole_batch():
    results = run_mpi(2, "launch_auto_check.py", timeout=120)
    _check(results)
    # verbose=True over 2 epochs: one process prints 2 lines; of 2 ranks only rank 0 prints
    # (each rank printed every line)
    assert [r["verbose_lines"] for r in results] == [2, 0]
    # train() called twice under ZeRO keeps the moments (afresh: 5e-4 off torch)
    for res in results:
        got = res["twice"]
        assert got["strategy"] in ("zero1", "zero2") and got["steps"] == 12, got
        assert got["loss"] < 1e-5, got


@pytest.mark.mpi
@pytest.mark.slow  # ~11 s on a quiet machine: Spawn starts a process manager first
def test_auto_in_ranks_spawned_from_a_process_trains_over_them():
    from skiff.kernels.backend import cpu_count

    if cpu_count() < 2:
        pytest.skip("2 ranks need 2 cores")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    # Spawn from a singleton process starts the children through the MPI's own mpiexec
    env["PATH"] = os.path.dirname(mpiexec()) + os.pathsep + env.get("PATH", "")
    proc = subprocess.run(["timeout", "-s", "KILL", "120", sys.executable,
                           str(HERE / "scripts" / "spawn_parent.py"), "2",
                           str(HERE / "scripts" / "launch_auto_check.py")],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    import json

    results = [json.loads(line[len("RESULT "):]) for line in proc.stdout.splitlines()
               if line.startswith("RESULT ")]
    _check(sorted(results, key=lambda r: r["rank"]), kinds=("mlp",))

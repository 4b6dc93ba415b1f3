"""``%solve ... --np N`` through the jobs layer: every rank solves, the result records the
split, a dry run for 8 GPUs shows it, and what cannot run distributed is refused before any
run folder exists."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.jobs import submit


def _folders(runs_dir):
    return list(runs_dir.iterdir()) if runs_dir.exists() else []


@pytest.mark.mpi
@pytest.mark.slow
def test_np_2_solves_on_both_ranks_and_equals_the_one_rank_job(tmp_path):
    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    one, _ = submit("solve", f"poisson --grid 64x48 --save {tmp_path / 'one.npz'}")
    two, _ = submit("solve", f"poisson --grid 64x48 --np 2 --save {tmp_path / 'two.npz'}")
    one.wait(120)
    two.wait(120)
    assert one.status == "done" and two.status == "done", (one.error, two.error)
    res = two.result
    assert res["ranks"] == 2 and res["converged"]
    assert res["subdomains"] == [{"rank": 0, "index": [[0, 32], [0, 48]], "cells": 1536},
                                 {"rank": 1, "index": [[32, 64], [0, 48]], "cells": 1536}]
    assert res["halo_bytes"] > 0
    assert abs(res["iterations"] - one.result["iterations"]) <= 1
    a = np.load(tmp_path / "one.npz")["field"]
    b = np.load(tmp_path / "two.npz")["field"]
    assert b.shape == (64, 48)
    assert np.abs(a - b).max() < 1e-8 * np.abs(a).max()
    assert (two.run_dir / "artifacts" / "field.png").exists()


def test_a_dry_run_for_8_gpus_shows_the_decomposition_and_memory_per_rank(runs_dir, tmp_path,
                                                                          monkeypatch):
    import tempfile

    from skiff.kernels.solve.estimate import format_bytes
    from skiff.kernels.solve.parallel import plan

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the script's folder: the test's

    job, _ = submit("solve", "poisson --grid 464x464x464 --launcher slurm --nodes 2 "
                             "--gpus-per-node 4 --dry-run", front="cli")
    expected = plan((464, 464, 464), 8, method="cg", precond="auto")
    note = job.submission["plan"]
    assert "8 ranks as 2x2x2 blocks of 232x232x232 cells" in note
    assert format_bytes(expected["bytes_per_rank"]) in note
    config = json.loads((job.run_dir / "config.json").read_text())
    split = config["config"]["decomposition"]
    assert split["ranks"] == 8 and split["dims"] == [2, 2, 2]
    assert len(split["subdomains"]) == 8 and split["bytes_per_rank"] == expected["bytes_per_rank"]
    assert job.status == "cancelled"   # written, not queued
    logs = [e["message"] for e in job.events() if e["type"] == "log"]
    assert any("decomposition: 8 ranks" in m for m in logs)


def test_a_user_matrix_with_np_is_refused_before_any_rank_starts(runs_dir):
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(50, 50)).tocsr()
    with pytest.raises(ValueError) as err:
        submit("solve", "A b --np 2", user_ns={"A": A, "b": np.ones(50)})
    message = str(err.value)
    assert "'A' is a notebook csr_matrix" in message and "one rank only" in message
    assert "\n" not in message and _folders(runs_dir) == []


@pytest.mark.parametrize("line, needle", [
    ("poisson --np 2 --method fmg", "method 'fmg' does not run distributed yet"),
    ("convection --np 2", "convection does not run distributed yet"),
    ("poisson --np 2 --precond amg", "precond 'amg' does not run distributed yet"),
    ("cylinder --np 2", "runs on one rank"),
    ("train-nose --np 2", "runs on one rank"),
])
def test_what_cannot_run_distributed_is_refused_before_the_run_folder(runs_dir, line, needle):
    with pytest.raises(ValueError, match=needle):
        submit("solve", line)
    assert _folders(runs_dir) == []


@pytest.mark.mpi
@pytest.mark.slow
def test_a_cancel_stops_every_rank_at_the_same_iteration():
    """Rank 0 decides and broadcasts: both ranks leave the solve cooperatively (each writes
    its clean-exit marker), none is left blocked in a collective or killed."""
    import time

    from skiff.jobs.process import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    job, _ = submit("solve", "poisson --grid 64x64 --np 2 --method mg --rtol 1e-300 "
                             "--maxiter 1000000")
    end = time.monotonic() + 60
    while time.monotonic() < end and not job.refresh().done >= 1:
        time.sleep(0.1)
    assert job.state.done >= 1, job.error     # it is iterating
    job.cancel(grace=30)
    job.wait(60)
    assert job.status == "cancelled", job.error
    ranks = job.run_dir / "ranks"
    assert sorted(p.name for p in ranks.glob("*.exit")) == ["0.exit", "1.exit"]
    assert [(ranks / f"{r}.exit").read_text() for r in (0, 1)] == ["0", "0"]


def test_a_dry_run_without_slurm_is_refused_instead_of_running(runs_dir):
    with pytest.raises(ValueError, match="--dry-run .* give it with --launcher slurm"):
        submit("solve", "poisson --grid 32x32 --np 2 --dry-run")
    assert _folders(runs_dir) == []

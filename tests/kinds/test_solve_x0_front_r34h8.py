"""Round 34 (h8): ``--x0 PATH`` warm-starts a solve from a stopped run's ``partial.npz``, a
``--save``d solution or a ``.npy`` (the kernel's config ``x0``, h10's this round, named
``skiff solve ... --x0 RUN/partial.npz`` in its stopped summary). Checked before a job: the
file there and of a kind it reads, one rank, not a flow. The oracle: the kernel's Solver
given the same x0 takes the same iterations and gives the same x."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from skiff.jobs import submit
from skiff.jobs.launch import dry_run
from skiff.kernels.solve import Solver

if not hasattr(importlib.import_module("skiff.kernels.solve.entry"), "load_x0"):
    pytest.skip("the solve kernel reads no x0 from a config here", allow_module_level=True)


def _matrix(n=12):
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def test_x0_warm_starts_the_job(runs_dir, tmp_path):
    A = _matrix()
    b = np.asarray(A @ np.ones(A.shape[0])).ravel()
    first = Solver(A, method="cg", precond="jacobi").solve(b, rtol=1e-3)
    np.save(tmp_path / "x0.npy", first.x)
    oracle = Solver(A, method="cg", precond="jacobi").solve(b, x0=first.x, rtol=1e-10)
    cold = Solver(A, method="cg", precond="jacobi").solve(b, rtol=1e-10)
    assert oracle.iterations < cold.iterations   # the warm start is worth something
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    job, _ = submit("solve", f"{tmp_path / 'A.mtx'} --method cg --precond jacobi --rtol 1e-10 "
                    f"--x0 {tmp_path / 'x0.npy'}", front="cli")
    assert job.wait(120).status == "done", job.error
    assert job.config["x0"] == str(tmp_path / "x0.npy")
    assert job.result["iterations"] == oracle.iterations
    np.testing.assert_allclose(np.asarray(job.value.x).ravel(), oracle.x, rtol=0, atol=1e-12)


def test_x0_mistakes_are_one_line(runs_dir, tmp_path):
    A = _matrix(6)
    ns = {"A": A, "b": np.ones(36)}
    with pytest.raises(ValueError, match="no such --x0 file: 'nofile.npz'"):
        dry_run("solve", "A b --x0 nofile.npz", user_ns=ns, front="magic")
    (tmp_path / "x.txt").write_text("1")
    with pytest.raises(ValueError, match=r"--x0 reads a \.npz .* or a \.npy array"):
        dry_run("solve", f"A b --x0 {tmp_path / 'x.txt'}", user_ns=ns, front="magic")
    np.save(tmp_path / "x.npy", np.zeros(64 * 64))
    # several ranks take a warm start since round 34 (DistributedSolver.solve(x0=))
    doc = dry_run("solve", f"poisson --grid 64x64 --np 2 --x0 {tmp_path / 'x.npy'}")
    assert doc["np"] == 2 and doc["config"]["x0"] == str(tmp_path / "x.npy")
    # round 48 h7: a cylinder's --x0 is a stopped unsteady run's kept state (jobs resume)
    with pytest.raises(ValueError, match="--x0 of a cylinder .* case 2d-1 is steady"):
        dry_run("solve", f"cylinder --x0 {tmp_path / 'x.npy'}")
    with pytest.raises(ValueError, match="not a kept flow state"):
        dry_run("solve", f"cylinder --case 2d-2 --x0 {tmp_path / 'x.npy'}")
    with pytest.raises(ValueError, match="--x0 is not an option of problem 'train-nose'"):
        dry_run("solve", f"train-nose --x0 {tmp_path / 'x.npy'}")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())

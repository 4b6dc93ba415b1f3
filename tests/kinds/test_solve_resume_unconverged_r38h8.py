"""Round 38 (h8): ``jobs resume`` (and the monitor's resume button) of a solve that ran to its
``maxiter`` without converging said "ended done: nothing to resume; to solve it again:
COMMAND", the command that stops at the same limit. One that wrote its solution (``--save
FILE.npz``) now goes on from it for as many iterations again, as ``--x0 FILE.npz`` would; one
that kept nothing says to raise --maxiter or --save. The oracle: the kernel's Solver given
the saved x as x0 and the same maxiter (iterations, x)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.jobs import resume, submit
from skiff.kernels.solve import Solution, Solver
from skiff.kernels.solve.entry import build_problem


def test_a_saved_unconverged_solve_goes_on_from_its_solution(runs_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, _ = submit("solve", "poisson --grid 32x32 --precond jacobi --maxiter 4 "
                      "--save out/sol.npz", front="cli")
    assert first.wait(60).status == "done", first.error
    assert first.result["converged"] is False and first.result["iterations"] == 4
    saved = Solution.load(tmp_path / "out" / "sol.npz")
    monkeypatch.chdir(runs_dir)   # resumed from elsewhere: the file is found from the job's cwd
    again = resume(first)   # its last iterate, kept in the run folder (the --save'd x too)
    assert again.config["x0"] == str(first.run_dir / "partial.npz")
    np.testing.assert_array_equal(np.load(again.config["x0"])["x"], np.asarray(saved.x).ravel())
    assert again.wait(60).status == "done", again.error
    problem = build_problem(first.config)
    oracle = Solver(problem, method="cg", precond="jacobi").solve(
        x0=np.asarray(saved.x), maxiter=4)
    assert again.result["iterations"] == oracle.iterations == 4
    np.testing.assert_allclose(np.asarray(again.value.x).ravel(),
                               np.asarray(oracle.x).ravel(), rtol=0, atol=1e-12)
    assert again.result["relative_residual"] < first.result["relative_residual"]


def test_an_unconverged_solve_goes_on_from_its_kept_last_iterate(runs_dir):
    """Round 38 (coordinator): without --save, the run folder keeps the last iterate
    (``partial.npz``); the oracle: the kernel's Solver from that x, same maxiter."""
    first, _ = submit("solve", "poisson --grid 32x32 --precond jacobi --maxiter 3", front="cli")
    assert first.wait(60).status == "done" and first.result["converged"] is False
    kept = np.load(first.run_dir / "partial.npz")["x"]
    again = resume(first)
    assert again.wait(60).status == "done", again.error
    oracle = Solver(build_problem(first.config), method="cg", precond="jacobi").solve(
        x0=kept, maxiter=3)
    np.testing.assert_allclose(np.asarray(again.value.x).ravel(),
                               np.asarray(oracle.x).ravel(), rtol=0, atol=1e-12)
    first_run = Solver(build_problem(first.config), method="cg", precond="jacobi").solve(
        maxiter=3)
    np.testing.assert_allclose(kept, np.asarray(first_run.x).ravel(), rtol=0, atol=1e-12)


def test_an_unconverged_solve_that_kept_nothing_says_how_to_go_on(runs_dir):
    job, _ = submit("solve", "poisson --grid 16x16 --precond jacobi --maxiter 2", front="cli")
    assert job.wait(60).status == "done" and job.result["converged"] is False
    (job.run_dir / "partial.npz").unlink()   # a job of an older skiff kept no iterate
    with pytest.raises(ValueError, match=r"ended without converging \(maxiter.*higher "
                                         r"--maxiter, or with --save FILE\.npz"):
        resume(job)
    done, _ = submit("solve", "poisson --grid 16x16", front="cli")
    assert done.wait(60).status == "done" and done.result["converged"] is True
    with pytest.raises(ValueError, match="ended done: nothing to resume"):
        resume(done)

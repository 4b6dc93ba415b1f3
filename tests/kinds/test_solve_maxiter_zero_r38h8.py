"""Round 38 (h8): ``--maxiter 0`` is SciPy's "no iteration" (its cg, bicgstab, minres return
x0 untouched), which the kernel's ``Solver.solve`` takes: the CLI, the magic's grammar and a
``%%solve`` spec refused it ("expected a positive integer"). It now goes through on one rank;
several ranks refuse it in one line (the distributed solver iterates at least once). The
oracle: SciPy's cg given the same x0 and maxiter=0."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
from scipy.sparse.linalg import cg

from skiff.grammar import GrammarError
from skiff.jobs import submit
from skiff.jobs.launch import dry_run
from skiff.kinds.solve import COMMAND, parse_spec, to_config


def _matrix(n=8):
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def test_maxiter_zero_returns_x0_as_scipy(runs_dir, tmp_path):
    A = _matrix()
    b = np.asarray(A @ np.ones(A.shape[0])).ravel()
    x0 = np.linspace(0.0, 1.0, A.shape[0])
    expected, info = cg(A, b, x0=x0, maxiter=0)
    assert info == 0 and np.array_equal(expected, x0)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "x0.npy", x0)
    job, _ = submit("solve", f"{tmp_path / 'A.mtx'} {tmp_path / 'b.npy'} --method cg "
                    f"--maxiter 0 --x0 {tmp_path / 'x0.npy'}", front="cli")
    assert job.wait(60).status == "done", job.error
    assert job.config["maxiter"] == 0 and job.result["iterations"] == 0
    np.testing.assert_array_equal(np.asarray(job.value.x).ravel(), expected)
    assert "maxiter=0" in job.result["status"]   # not converged: x0 is far from the solution


def test_maxiter_zero_in_the_grammar_and_a_spec():
    assert COMMAND.parse("poisson --maxiter 0").maxiter == 0
    with pytest.raises(GrammarError, match="--maxiter: expected an integer >= 0, got '-1'"):
        COMMAND.parse("poisson --maxiter -1")
    spec = parse_spec("domain: 16x16\nsource: 1\nsolver: cg mg maxiter=0")
    assert to_config({"spec": spec})["maxiter"] == 0


def test_several_ranks_refuse_maxiter_zero(runs_dir):
    assert dry_run("solve", "poisson --grid 32x32 --maxiter 0")["config"]["maxiter"] == 0
    with pytest.raises(ValueError, match=r"--np 2: --maxiter 0 .* one-rank solver's"):
        dry_run("solve", "poisson --grid 32x32 --maxiter 0 --np 2")
    assert dry_run("solve", "poisson --grid 32x32 --maxiter 1 --np 2")["np"] == 2

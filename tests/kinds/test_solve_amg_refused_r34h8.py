"""Round 34 (h8): ``--amg sa|classical`` where AMG is not the preconditioner is refused before
a job, in the flags' words. Before, ``solve poisson --amg classical`` and ``solve A.mtx
--precond jacobi --amg classical`` made a run folder whose job failed at once on the solver's
Python names (``amg='classical' ... use precond='amg'``), and ``solve cylinder --amg sa``
passed silently (the flow solver's linear solves are its own).

The oracle is the kernel's :class:`Solver`: the front refuses exactly the combinations it
refuses, and takes the ones it takes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.jobs.launch import dry_run
from skiff.kernels.solve import Solver, poisson


def _matrix(n: int = 12):
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def _kernel_takes(system, **options) -> bool:
    try:
        Solver(system, **options)
    except ValueError as exc:
        assert "amg=" in str(exc), exc
        return False
    return True


@pytest.mark.parametrize("precond", ["auto", "amg", "jacobi", "none"])
@pytest.mark.parametrize("amg", ["classical", "sa"])
def test_a_matrix_variable_refused_as_the_solver_refuses(runs_dir, precond, amg):
    A = _matrix()
    b = np.ones(A.shape[0])
    takes = _kernel_takes(A, precond=precond, amg=amg)
    words = f"A b --precond {precond} --amg {amg}"
    if takes:
        config = dry_run("solve", words, user_ns={"A": A, "b": b}, front="magic")["config"]
        assert config["amg"] == amg
    else:
        with pytest.raises(ValueError, match=rf"--amg {amg} .*add --precond amg, or drop "
                                             r"--amg"):
            dry_run("solve", words, user_ns={"A": A, "b": b}, front="magic")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


@pytest.mark.parametrize("precond", ["auto", "amg", "mg", "jacobi"])
def test_a_built_in_grid_refused_as_the_solver_refuses(runs_dir, precond):
    takes = _kernel_takes(poisson((16, 16)), precond=precond, amg="classical")
    words = f"poisson --grid 16x16 --precond {precond} --amg classical"
    if takes:
        assert dry_run("solve", words)["config"]["amg"] == "classical"
    else:
        with pytest.raises(ValueError, match="add --precond amg, or drop --amg"):
            dry_run("solve", words)
    assert precond != "amg" or takes   # the combination that must go through does


def test_a_matrix_file_keeps_its_amg_kind(runs_dir, tmp_path):
    import scipy.io as sio

    sio.mmwrite(str(tmp_path / "A.mtx"), _matrix())
    config = dry_run("solve", f"{tmp_path / 'A.mtx'} --amg classical")["config"]
    assert config["amg"] == "classical" and config["precond"] == "auto"
    with pytest.raises(ValueError, match="the preconditioner is 'jacobi'"):
        dry_run("solve", f"{tmp_path / 'A.mtx'} --precond jacobi --amg sa")


@pytest.mark.parametrize("problem", ["cylinder", "train-nose"])
def test_a_flow_refuses_amg(runs_dir, problem):
    with pytest.raises(ValueError, match="--amg is not an option of problem"):
        dry_run("solve", f"{problem} --amg sa")


def test_a_solve_cell_refused_as_the_solver_refuses(runs_dir):
    cell = "domain: 16x16\nsource: 1"
    assert not _kernel_takes(poisson((16, 16)), precond="auto", amg="classical")
    with pytest.raises(ValueError, match="add --precond amg, or drop --amg"):
        dry_run("solve", "--amg classical", cell=cell, front="magic")
    config = dry_run("solve", "--precond amg --amg classical", cell=cell,
                     front="magic")["config"]
    assert (config["precond"], config["amg"]) == ("amg", "classical")

"""Round 35 (h8): the solver's options a pyamg user reaches for first, which no front
reached (h7 made the kernel entry read them this round): ``--strength NAME[:THETA]``,
``--max-coarse N``, ``--interpolation linear|constant|classical|direct`` and
``--near-nullspace PATH|VAR`` from the terminal, ``%solve`` and the Solve panel (the form
is the grammar's). The oracle: the kernel's ``Solver`` given the same option gives the
job's iterations and residual (and without it another residual: the option is read).
Where nothing would read one it is refused before any job, in one line with the fix."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main
from skiff.jobs.launch import dry_run
from skiff.kernels.solve import Solver


def _poisson(n: int) -> sp.csr_matrix:
    T = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    return sp.kronsum(T, T).tocsr()


def _elasticity():
    import pyamg

    A, B = pyamg.gallery.linear_elasticity((16, 16), format="bsr")
    return A.tocsr(), B


def _job(capsys, words) -> dict:
    capsys.readouterr()
    assert main(["solve", *words, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["result"]


def _same(result, sol):
    assert result["iterations"] == sol.iterations
    assert result["relative_residual"] == pytest.approx(sol.relative_residual, rel=1e-9)


def test_strength_and_max_coarse_on_a_matrix_file(runs_dir, tmp_path, capsys):
    A = _poisson(40)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    b = A @ np.ones(A.shape[0])   # a file without B: b = A 1
    got = _job(capsys, [str(tmp_path / "A.mtx"), "--strength", "symmetric:0.1",
                        "--max-coarse", "20"])
    oracle = Solver(A, amg="sa", amg_options={"strength": ("symmetric", {"theta": 0.1}),
                                              "max_coarse": 20}).solve(b, rtol=1e-8)
    _same(got, oracle)
    plain = Solver(A).solve(b, rtol=1e-8)
    assert plain.relative_residual != pytest.approx(got["relative_residual"], rel=1e-3)


def test_interpolation_direct_is_classical_amgs(runs_dir, tmp_path, capsys):
    A = _poisson(40)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    b = A @ np.ones(A.shape[0])
    got = _job(capsys, [str(tmp_path / "A.mtx"), "--interpolation", "direct"])
    _same(got, Solver(A, amg="classical", amg_options={"interpolation": "direct"})
          .solve(b, rtol=1e-8))
    assert got["iterations"] != Solver(A).solve(b, rtol=1e-8).iterations


def test_interpolation_constant_on_a_grid(runs_dir, capsys):
    from skiff.kernels.solve.entry import build_problem

    got = _job(capsys, ["poisson", "--grid", "64x64", "--interpolation", "constant"])
    config = dry_run("solve", "poisson --grid 64x64")["config"]
    problem = build_problem(config)
    oracle = Solver(problem, method="cg", precond="auto", interpolation="constant").solve(
        None, rtol=1e-8)
    _same(got, oracle)
    assert got["iterations"] != Solver(problem, method="cg").solve(None, rtol=1e-8).iterations


def test_near_nullspace_file_and_notebook_variable(runs_dir, tmp_path, capsys):
    A, B = _elasticity()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    two = B[:, :2]   # two of the three rigid modes: another hierarchy than the default
    sio.mmwrite(str(tmp_path / "E.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    np.savez(tmp_path / "B.npz", B=two)
    oracle = Solver(A, near_nullspace=two).solve(b, rtol=1e-8)
    assert oracle.relative_residual != pytest.approx(
        Solver(A).solve(b, rtol=1e-8).relative_residual, rel=1e-3)
    got = _job(capsys, [str(tmp_path / "E.mtx"), str(tmp_path / "b.npy"),
                        "--near-nullspace", str(tmp_path / "B.npz")])
    _same(got, oracle)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    shell.user_ns.update(E=A, bE=b, B2=two)
    shell.run_line_magic("solve", "E bE --near-nullspace B2 --wait -o j_nn")
    _same(shell.user_ns["j_nn"].result, oracle)
    assert shell.user_ns["j_nn"].config["near_nullspace"] == "<notebook B2>"


@pytest.mark.parametrize("line, message", [
    ("poisson --grid 16x16 --strength symmetric",
     "--strength is algebraic multigrid's and 'poisson' is preconditioned by geometric "
     "multigrid: add --precond amg, or drop --strength"),
    ("poisson --grid 16x16 --precond jacobi --interpolation linear",
     "--interpolation linear is geometric multigrid's, and --method cg --precond jacobi "
     "runs none: use --precond mg (or --method mg), or drop --interpolation"),
    ("{A} --interpolation linear", "--interpolation linear is geometric multigrid's, and a "
                                   "matrix is preconditioned by AMG"),
    ("{A} --amg sa --interpolation direct", "use --amg classical, or drop --interpolation"),
    ("{A} --amg classical --strength evolution", "--strength classical[:THETA] there"),
    ("{A} --precond jacobi --max-coarse 5", "--max-coarse is algebraic multigrid's and the "
                                            "preconditioner is 'jacobi'"),
    ("{A} --near-nullspace {B}", "shape (5, 2), and the matrix has 100 unknowns"),
    ("{A} --interpolation direct --amg-options interpolation=classical", "disagree"),
    ("{A} --amg classical --strength classical:0.5 --amg-options theta=0.3",
     "both set the threshold"),
    ("cylinder --max-coarse 3", "--max-coarse is not an option of problem 'cylinder'"),
])
def test_refused_where_nothing_reads_it(runs_dir, tmp_path, line, message):
    sio.mmwrite(str(tmp_path / "A.mtx"), _poisson(10))
    np.save(tmp_path / "B.npy", np.ones((5, 2)))
    with pytest.raises(ValueError) as err:
        dry_run("solve", line.format(A=tmp_path / "A.mtx", B=tmp_path / "B.npy"),
                front="cli")
    assert message in str(err.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_the_panel_says_it_as_the_field_changes(runs_dir):
    from skiff.widgets.panels import solve_form

    form = solve_form()
    form.set(problem="poisson", grid="32x32", strength="evolution")
    assert form.launch_button.disabled and "add --precond amg" in "".join(form.errors.values())
    form.set(precond="amg")
    assert form.errors == {} and not form.launch_button.disabled
    assert "--strength evolution" in form.cli


def test_amg_options_sweeps(runs_dir, tmp_path, capsys):
    """``--amg-options sweeps=2``: classical AMG's Gauss-Seidel sweeps a side (pyamg's
    presmoother iterations; h7's ``amg_options`` key this round)."""
    A = _poisson(40)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    b = A @ np.ones(A.shape[0])
    got = _job(capsys, [str(tmp_path / "A.mtx"), "--amg", "classical", "--amg-options",
                        "sweeps=2"])
    _same(got, Solver(A, amg="classical", amg_options={"sweeps": 2}).solve(b, rtol=1e-8))
    assert got["iterations"] < Solver(A, amg="classical").solve(b, rtol=1e-8).iterations


def test_a_mistyped_notebook_variable(runs_dir):
    A, B = _elasticity()
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    shell.user_ns.update(E=A, bE=np.ones(A.shape[0]), Bmodes=B)
    result = shell.run_cell("%solve E bE --near-nullspace Bmode")
    assert "--near-nullspace Bmode: no notebook variable or file of that name (did you " \
           "mean 'Bmodes'?)" in str(result.error_in_exec)


@pytest.mark.parametrize("words, kernel", [
    (["--interpolation", "extended+i"], {"amg": "classical",
                                         "amg_options": {"interpolation": "extended+i"}}),
    (["--amg", "classical", "--amg-options", "cf=pmis"],
     {"amg": "classical", "amg_options": {"cf": "PMIS"}}),
    (["--amg", "classical", "--amg-options", "aggressive=1"],
     {"amg": "classical", "amg_options": {"aggressive": 1}}),
])
def test_classical_amgs_newer_options(runs_dir, tmp_path, capsys, words, kernel):
    """h7's classical AMG options of this round (PMIS, aggressive coarsening, extended+i
    interpolation) from the terminal; the oracle is the kernel's Solver given each."""
    from skiff.kernels.solve.amg_rs import SPLITTINGS

    if "PMIS" not in SPLITTINGS:
        pytest.skip("the kernel has no PMIS splitting")
    A = _poisson(40)
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    b = A @ np.ones(A.shape[0])
    got = _job(capsys, [str(tmp_path / "A.mtx"), *words])
    _same(got, Solver(A, **kernel).solve(b, rtol=1e-8))
    assert got["relative_residual"] != pytest.approx(
        Solver(A, amg="classical").solve(b, rtol=1e-8).relative_residual, rel=1e-3)


def test_pmis_takes_no_second_pass(runs_dir, tmp_path):
    sio.mmwrite(str(tmp_path / "A.mtx"), _poisson(10))
    with pytest.raises(ValueError, match="cf=PMIS takes neither"):
        dry_run("solve", f"{tmp_path / 'A.mtx'} --amg classical --amg-options "
                         f"cf=PMIS,second_pass=true", front="cli")

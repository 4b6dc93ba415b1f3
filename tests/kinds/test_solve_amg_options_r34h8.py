"""Round 34 (h8): ``--amg-options KEY=VALUE,...``: classical AMG's options (the kernel's
``amg_options=``, round 34 h7: pyamg's ``ruge_stuben_solver`` second_pass, interpolation,
theta, order, max_coarse) from the terminal, ``%solve`` and the Solve panel, checked before a
job (a misspelt key gets "did you mean", a value out of range one line, without ``--amg
classical`` the flag that is missing). The oracle: the kernel's Solver given the same dict
describes the same hierarchy as the job built from the front's config."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

from skiff.cli import main
from skiff.jobs import submit
from skiff.jobs.launch import dry_run
from skiff.kernels.solve import Solver
from skiff.kernels.solve.entry import solver_from_config


def _cells(n=10, seed=1):
    k = np.where(np.random.default_rng(seed).random((n, n)) < 0.3, 1e4, 1.0).ravel()
    idx = np.arange(n * n).reshape(n, n)
    rows, cols, vals = [], [], []
    for ax in range(2):
        a = np.take(idx, range(n - 1), axis=ax).ravel()
        b = np.take(idx, range(1, n), axis=ax).ravel()
        w = 2 * k[a] * k[b] / (k[a] + k[b])
        rows += [a, b]
        cols += [b, a]
        vals += [-w, -w]
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n * n, n * n))
    return (A + sp.diags(-np.asarray(A.sum(1)).ravel() + 1e-3 * k)).tocsr()


def test_amg_options_reach_the_solver(runs_dir, tmp_path):
    A = _cells()
    b = np.ones(A.shape[0])
    want = {"second_pass": True, "theta": 0.5, "interpolation": "direct"}
    oracle = Solver(A, method="cg", precond="amg", amg="classical", amg_options=want)
    line = "A b --amg classical --amg-options second_pass=true,theta=0.5,interpolation=direct"
    config = dry_run("solve", line, user_ns={"A": A, "b": b}, front="magic")["config"]
    assert config["amg_options"] == want
    got = solver_from_config(A, {**config, "method": "cg"})
    assert got.describe() == oracle.describe() and "second pass" in oracle.describe()
    # a matrix file, run as a job: the solver's line in its log is the kernel's
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    job, _ = submit("solve", f"{tmp_path / 'A.mtx'} --method cg --amg classical "
                    "--amg-options second_pass=true,theta=0.5,interpolation=direct",
                    front="cli")
    assert job.wait(120).status == "done", job.error
    assert any(oracle.describe() in line for line in job.logs.splitlines())


@pytest.mark.parametrize("value, message", [
    ("secondpass=true", "did you mean 'second_pass'"),
    ("theta=2", "theta is the strength threshold in [0, 1)"),
    ("order=pyamgg", "did you mean 'pyamg'"),
    ("max_coarse=0", "max_coarse is a positive integer"),
    ("second_pass", "expected KEY=VALUE pairs"),
])
def test_a_bad_option_is_one_line(runs_dir, capsys, tmp_path, value, message):
    sio.mmwrite(str(tmp_path / "A.mtx"), _cells(6))
    assert main(["solve", str(tmp_path / "A.mtx"), "--amg", "classical", "--amg-options",
                 value, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_without_classical_the_flag_is_named(runs_dir, tmp_path):
    A = _cells(6)
    with pytest.raises(ValueError):   # the kernel refuses it too
        Solver(A, precond="amg", amg="sa", amg_options={"theta": 0.5})
    with pytest.raises(ValueError, match=r"--amg-options are classical AMG's \(Ruge-Stueben\)"
                                         r": add --amg classical --precond amg"):
        dry_run("solve", "poisson --grid 16x16 --amg-options theta=0.5")
    with pytest.raises(ValueError, match=r"add --amg classical \(--amg sa\)"):
        dry_run("solve", "A b --amg sa --amg-options theta=0.5",
                user_ns={"A": A, "b": np.ones(36)}, front="magic")
    with pytest.raises(ValueError, match="--amg-options is not an option of problem"):
        dry_run("solve", "cylinder --amg-options theta=0.5")


def test_the_panel_renders_and_takes_it(runs_dir):
    from skiff.widgets.panels import solve_form

    form = solve_form()
    form.set(problem="poisson", grid="16x16", precond="amg", amg="classical",
             amg_options="second_pass=true, theta=0.5")
    assert form.errors == {} and not form.launch_button.disabled
    assert "--amg-options second_pass=true,theta=0.5" in form.magic_line.value
    assert form.config["amg_options"] == {"second_pass": True, "theta": 0.5}

"""The solve command's options as a SciPy/pyamg user's probe met them (2027-01): an explicit
--method cg on convection ran bicgstab, options a matrix does not read were dropped, a mistyped
notebook variable was called a built-in problem, --rtol 0 with --atol was refused, a solve that
did not converge exited 0, and a matrix file with NaN entries failed deep inside AMG."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from skiff.kinds.solve import COMMAND, KIND
from skiff.kinds.solve import to_config as solve_config
from tests.helpers.cli import run_cli


def _values(line: str) -> dict:
    return vars(COMMAND.parse(line))


def _config(line: str) -> dict:
    return solve_config(_values(line), memory=False)


@pytest.mark.parametrize("method", ["cg", "pipecg"])
def test_an_explicit_cg_on_convection_is_refused(method):
    with pytest.raises(ValueError, match=rf"--method {method} needs a symmetric problem; "
                                         r"convection .*bicgstab or gmres"):
        _config(f"convection --grid 64x64 --method {method}")
    with pytest.raises(ValueError, match="needs a symmetric problem"):
        solve_config({**COMMAND.defaults(), "spec": {"grid": [16, 16], "velocity": "1,0",
                                                     "method": "cg"}}, memory=False)
    # left out, the default is still chosen for the problem
    assert _config("convection --grid 64x64")["method"] == "bicgstab"
    assert _config("poisson --grid 64x64")["method"] == "cg"
    assert _config("convection --grid 64x64 --method gmres")["method"] == "gmres"


@pytest.fixture
def matrix_file(tmp_path):
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(50, 50)).tocsr()
    path = tmp_path / "A.mtx"
    scipy.io.mmwrite(str(path), A)
    return str(path), A


@pytest.mark.parametrize("extra, needle", [
    ("--grid 64x64", "--grid is not read by .*a matrix \\(its size is its own\\)"),
    ("--bc neumann", "--bc is not read by"),
    ("--velocity 1,2", "--velocity is not read by"),
    ("--contrast 10", "--contrast is not read by"),
    ("--smoother chebyshev", "--smoother is not read by .*geometric multigrid's"),
    ("--re 100", "--re is not read by .*another problem's"),
])
def test_options_a_matrix_file_does_not_read_are_refused(matrix_file, extra, needle):
    path, _ = matrix_file
    with pytest.raises(ValueError, match=needle):
        KIND.prepare(_values(f"{path} {extra}"), user_ns={})


def test_options_a_notebook_matrix_does_not_read_are_refused(matrix_file):
    _, A = matrix_file
    ns = {"A": A, "b": np.ones(50)}
    with pytest.raises(ValueError, match="--grid is not read by 'A', a matrix"):
        KIND.prepare(_values("A b --grid 64x64 --bc neumann"), user_ns=ns)
    request = KIND.prepare(_values("A b --rtol 1e-6 --method gmres --restart 10"), user_ns=ns)
    assert request.config["method"] == "gmres" and request.config["restart"] == 10


def test_a_mistyped_notebook_variable_is_named_as_such(matrix_file):
    _, A = matrix_file
    ns = {"A": A, "Amat": A, "b": np.ones(50)}
    with pytest.raises(ValueError) as err:
        KIND.prepare(_values("Amta b"), user_ns=ns)
    text = str(err.value)
    assert "no notebook variable, matrix file or built-in problem named 'Amta'" in text
    assert "did you mean 'Amat'?" in text and "notebook matrices: A, Amat" in text
    assert "built-in problem;" not in text
    # B given to a real built-in problem keeps its own message
    with pytest.raises(ValueError, match="'poisson' is a built-in problem"):
        KIND.prepare(_values("poisson b"), user_ns=ns)


def test_rtol_zero_takes_atol_alone():
    assert _config("poisson --grid 16x16 --rtol 0 --atol 1e-6")["rtol"] == 0.0
    with pytest.raises(ValueError, match="rtol and atol must not both be 0"):
        _config("poisson --grid 16x16 --rtol 0")
    with pytest.raises(Exception, match="between 0 and 1"):
        _config("poisson --grid 16x16 --rtol 1")


def test_a_solve_that_did_not_converge_is_a_failure_the_cli_exits_on():
    done = SimpleNamespace(result={"converged": True, "problem": "matrix"})
    assert KIND.failures(done) == []
    flow = SimpleNamespace(result={"case": "2d-1", "bands": {}})        # no 'converged'
    assert KIND.failures(flow) == []
    stopped = SimpleNamespace(result={"converged": False, "problem": "matrix",
                                      "status": "maxiter: 2 iterations reached"})
    assert KIND.failures(stopped) == ["matrix: not converged: maxiter: 2 iterations reached"]


def _cli(*args, tmp_path, monkeypatch, capsys):
    """``python -m skiff solve ARGS`` in this process, its run folders under tmp_path/runs."""
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    return run_cli(capsys, "solve", *args)


def test_cli_exit_status_and_nan_file(matrix_file, tmp_path, monkeypatch, capsys):
    path, A = matrix_file
    io = {"monkeypatch": monkeypatch, "capsys": capsys}
    out = _cli(path, "--maxiter", "2", "--precond", "none", "--json", tmp_path=tmp_path, **io)
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert doc["result"]["converged"] is False and "maxiter" in doc["failed"][0]
    out = _cli(path, "--maxiter", "2", "--precond", "none", tmp_path=tmp_path, **io)
    assert out.returncode == 1 and "not converged" in out.stdout  # the summary says it
    # and the last line says it once, not as one failed input of many
    assert out.stderr.strip().splitlines()[-1].startswith("skiff solve: matrix: not converged")
    assert "the others were done" not in out.stderr
    out = _cli(path, "--rtol", "0", "--atol", "1e-6", tmp_path=tmp_path, **io)
    assert out.returncode == 0, out.stderr
    bad = A.copy()
    bad.data[7] = np.nan
    nan_path = tmp_path / "Anan.npz"
    sp.save_npz(str(nan_path), bad)
    runs = sorted((tmp_path / "runs").iterdir())
    out = _cli(str(nan_path), tmp_path=tmp_path, **io)
    assert out.returncode == 2
    assert "'Anan.npz': the matrix has 1 non-finite entry (NaN or inf), the first at row 2, " \
           "column 3: nan" in out.stderr
    assert sorted((tmp_path / "runs").iterdir()) == runs      # refused before a run folder

"""``solve A.mtx --smoother schwarz-overlap``: AMG's block smoothers (round 29) reach a
matrix from the terminal and a cell; they were not among --smoother's choices, and every
--smoother was refused for a matrix. A grid problem preconditioned by geometric multigrid
refuses them naming --precond amg. Oracle: SciPy's spsolve."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from skiff.kinds.solve import COMMAND, KIND
from tests.helpers.cli import run_cli


def _values(line: str) -> dict:
    return vars(COMMAND.parse(line))


def _jump_matrix(n=24, seed=3):
    """A 2-D diffusion (Dirichlet sides) whose edge coefficients jump 1e-4 .. 1e4 at random:
    G^T W G, symmetric positive definite."""
    rng = np.random.default_rng(seed)
    d = sp.diags([-1.0, 1.0], [-1, 0], shape=(n + 1, n))  # differences, boundary edges kept
    eye = sp.identity(n)
    grads = [sp.kron(eye, d), sp.kron(d, eye)]
    parts = [g.T @ sp.diags(10.0 ** rng.uniform(-4, 4, size=g.shape[0])) @ g for g in grads]
    return sp.csr_matrix(parts[0] + parts[1])


def _cli(*args, tmp_path, monkeypatch, capsys):
    """``python -m skiff solve ARGS`` in this process, its run folders under tmp_path/runs."""
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    return run_cli(capsys, "solve", *args)


@pytest.mark.parametrize("smoother", ["schwarz", "schwarz-overlap"])
def test_a_matrix_file_solves_with_amgs_block_smoothers(tmp_path, smoother, monkeypatch,
                                                       capsys):
    A = _jump_matrix()
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    scipy.io.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    save = tmp_path / "x.npz"
    out = _cli(str(tmp_path / "A.mtx"), str(tmp_path / "b.npy"), "--smoother",
               smoother, "--rtol", "1e-10", "--save", str(save), "--json", tmp_path=tmp_path,
               monkeypatch=monkeypatch, capsys=capsys)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["result"]["converged"] is True
    x = np.load(save)["field"].ravel()
    ref = spla.spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_the_smoother_reaches_the_solver_and_grids_refuse_it(tmp_path):
    A = _jump_matrix(8)
    scipy.io.mmwrite(str(tmp_path / "A.mtx"), A)
    request = KIND.prepare(_values(f"{tmp_path / 'A.mtx'} --smoother schwarz"), user_ns={})
    assert request.config["smoother"] == "schwarz"
    # a notebook matrix too
    request = KIND.prepare(_values("A b --smoother schwarz-overlap"),
                           user_ns={"A": A, "b": np.ones(A.shape[0])})
    assert request.config["smoother"] == "schwarz-overlap"
    # a geometric smoother on a matrix is still refused (AMG is its multigrid)
    with pytest.raises(ValueError, match="--smoother is not read by"):
        KIND.prepare(_values(f"{tmp_path / 'A.mtx'} --smoother chebyshev"), user_ns={})
    with pytest.raises(ValueError, match="--smoother schwarz is AMG's .* add --precond amg"):
        KIND.prepare(_values("poisson --grid 32x32 --smoother schwarz"), user_ns={})
    request = KIND.prepare(_values("poisson --grid 32x32 --precond amg --smoother schwarz"),
                           user_ns={})
    assert request.config["smoother"] == "schwarz"

"""A user's matrix with an all-zero row (round 27): SciPy's ``spsolve`` finds it singular;
``python -m skiff solve A.mtx b.npy`` and ``%solve A b`` say which row before a job (a usage
error, exit status 2, no run folder), where the solver said it from inside a run folder."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell


def _with_zero_row(n=12, row=5):
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    A = (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tolil()
    A[row, :] = 0.0
    A = A.tocsr()
    A.eliminate_zeros()
    return A, np.ones(n * n)


def test_scipy_finds_it_singular():
    A, b = _with_zero_row()
    with warnings.catch_warnings():
        warnings.simplefilter("error", spla.MatrixRankWarning)
        with pytest.raises(spla.MatrixRankWarning):
            spla.spsolve(A.tocsc(), b)


def test_cli_refuses_before_a_job(tmp_path, runs_dir, capsys, monkeypatch):
    from skiff.cli import main  # python -m skiff, in this process (round 41: an interpreter
    # and its import of skiff for a refusal)

    A, b = _with_zero_row()
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["solve", "A.mtx", "b.npy"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "row 5 of the matrix is all zeros" in err
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_magic_refuses_before_a_job(runs_dir):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    A, b = _with_zero_row(row=7)
    shell.user_ns.update(Az=A, bz=b, Ad=A.toarray())
    for name in ("Az", "Ad"):
        with pytest.raises(UsageError, match="row 7 of the matrix is all zeros"):
            shell.run_line_magic("solve", f"{name} bz --wait")
    full = (A + sp.eye(A.shape[0])).tocsr()   # no empty row: it solves
    shell.user_ns.update(Af=full)
    job = shell.run_line_magic("solve", "Af bz --rtol 1e-10 --wait")
    assert job.status == "done", job.error
    np.testing.assert_allclose(job.value.x, spla.spsolve(full.tocsc(), b), rtol=1e-7)

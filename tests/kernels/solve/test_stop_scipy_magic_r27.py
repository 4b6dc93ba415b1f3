"""``%solve A b --method minres --stop scipy`` and ``python -m skiff solve ... --stop scipy``
(round 27): SciPy's ``minres`` iteration count from the notebook and the terminal; bad uses
refused before a job."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp
import scipy.sparse.linalg as spla

pytest.importorskip("IPython")
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402


def _shifted(n=20):
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    L = (sp.kron(sp.eye(n), one) + sp.kron(one, sp.eye(n))).tocsr()
    return (L - 0.5 * sp.eye(n * n)).tocsr()


def _scipy_iterations(A, b, rtol):
    count = [0]
    spla.minres(A, b, rtol=rtol, callback=lambda xk: count.__setitem__(0, count[0] + 1))
    return count[0]


@pytest.fixture()
def shell(runs_dir):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_magic_stop_scipy_gives_scipys_iterations(shell):
    A = _shifted()
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    shell.user_ns.update(As=A, bs=b)
    job = shell.run_line_magic(
        "solve", "As bs --method minres --precond none --rtol 1e-6 --stop scipy --wait")
    assert job.status == "done", job.error
    assert job.result["iterations"] == _scipy_iterations(A, b, 1e-6)
    with pytest.raises(UsageError, match="--method minres"):
        shell.run_line_magic("solve", "As bs --method gmres --stop scipy --wait")


def test_cli_stop_scipy(tmp_path, runs_dir):
    A = _shifted(16)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    sio.mmwrite(str(tmp_path / "A.mtx"), A)
    np.save(tmp_path / "b.npy", b)
    out = subprocess.run([sys.executable, "-m", "skiff", "solve", "A.mtx", "b.npy", "--method",
                          "minres", "--precond", "none", "--rtol", "1e-7", "--stop", "scipy",
                          "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["result"]["iterations"] == _scipy_iterations(A, b, 1e-7)

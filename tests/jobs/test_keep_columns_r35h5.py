"""Round 35 (h5): a several-column solve stopped in a job keeps every column it had.

The worker (``keep_partial``) writes what the raised ``JobCancelled`` carries; round 34's
solve attached only the current column's iterate, so a stop in column 3 of 4 lost the two
columns solved (h7's ``Solver._keep_columns_stopped`` now makes it ``(n, k)``). Through the
worker's own writer: ``partial.npz`` holds the ``(n, k)`` x (the finished columns equal to
SciPy's solution), ``result.json`` the columns done and each column's residual (None for
one not started: JSON null), and ``load_x0`` of that file warm-starts every column."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from skiff.jobs.worker import PARTIAL_FILE, keep_partial
from skiff.kernels.backend.report import JobCancelled, NullReporter
from skiff.kernels.solve.entry import load_x0
from skiff.kernels.solve.solver import Solver


class _Stop(NullReporter):
    def __init__(self, k):
        self.k, self.looks, self.lines, self.artifacts = k, 0, [], []

    def should_stop(self):
        self.looks += 1
        return self.looks >= self.k

    def log(self, message, *, level="info"):
        self.lines.append(message)

    def artifact(self, name, path, *, kind="file"):
        self.artifacts.append(str(path))


def test_every_column_is_kept_and_warm_starts(tmp_path):
    n = 200
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    B = np.column_stack([np.cos(np.arange(n) * 0.07 * (c + 1)) + 1.0 for c in range(3)])
    count = _Stop(10 ** 9)
    Solver(A, method="cg", precond="jacobi").solve(B[:, 0], reporter=count)
    rep = _Stop(count.looks + count.looks // 2)  # in the second column
    with pytest.raises(JobCancelled) as info:
        Solver(A, method="cg", precond="jacobi").solve(B, reporter=rep)
    assert keep_partial(tmp_path, info.value, rep, "cancelled") == ["result.json",
                                                                   PARTIAL_FILE]
    ref = sla.spsolve(A.tocsc(), B)
    with np.load(tmp_path / PARTIAL_FILE) as z:
        X = z["x"]
    assert X.shape == (n, 3)
    np.testing.assert_allclose(X[:, 0], ref[:, 0], atol=1e-6 * np.abs(ref).max())
    assert np.all(X[:, 2] == 0.0)
    doc = json.loads((tmp_path / "result.json").read_text())
    assert doc["stopped"] == "cancelled" and doc["columns_done"] == 1
    assert doc["column_residuals"][2] is None and doc["column_residuals"][1] > 1e-8
    x0 = load_x0(str(tmp_path / PARTIAL_FILE))
    sol = Solver(A, method="cg", precond="jacobi").solve(B, x0=x0)
    assert sol.columns[0].iterations == 0
    np.testing.assert_allclose(sol.x, ref, atol=1e-6 * np.abs(ref).max())

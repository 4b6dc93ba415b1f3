"""Round 35: a stopped solve's record (``result.json``, ``--json``) has ``relative_residual``
as a finished solve's has (it had only ``residual``: a reader of ``--json`` found the key of
one and not the other). Several right-hand sides: the worst column's, as a finished
several-column solve reports. Oracle: ``|b - A x|/|b|`` of the kept x by numpy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.kernels.backend.report import JobCancelled
from skiff.kernels.solve.solver import Solver
from tests.helpers.stop_at import StopAtLook


def _system(n=200):
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    return A, np.cos(np.arange(n) * 0.07) + 1


def test_one_column():
    A, b = _system()
    with pytest.raises(JobCancelled) as info:
        Solver(A, method="cg", precond="jacobi").solve(b, reporter=StopAtLook(20))
    x = info.value.arrays["x"]
    want = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    assert info.value.partial["relative_residual"] == pytest.approx(want, rel=1e-10)


def test_several_columns_report_the_worst():
    A, b = _system()
    B = np.column_stack([b, 2 * b + 1, b[::-1]])
    with pytest.raises(JobCancelled) as info:
        Solver(A, method="cg", precond="jacobi").solve(B, reporter=StopAtLook(150))
    X = info.value.arrays["x"]
    done = int(info.value.partial["columns_done"])
    rels = [np.linalg.norm(B[:, c] - A @ X[:, c]) / np.linalg.norm(B[:, c])
            for c in range(done + 1)]
    assert info.value.partial["relative_residual"] == pytest.approx(max(rels), rel=1e-6)

"""Round 44 (h4): a SciPy user's matrix files. A pure Neumann matrix (rows summing to zero)
written to a Matrix Market file and solved without B: the job made b = A 1 = 0, reported
'converged in 0 iterations' with x = 0 and 'max error against the exact solution 1' (x is
defined up to a constant). Now b = A x_e (x_e of mean 0) and the error is measured up to a
constant."""

from __future__ import annotations

import numpy as np
import scipy.io as sio
import scipy.sparse as sp

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.solve.entry import run_matrix_file


class _Log(NullReporter):
    def __init__(self):
        super().__init__()
        self.lines = []

    def log(self, line, *a, **k):
        self.lines.append(str(line))


def _neumann(n):
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n)).tolil()
    T[0, 0] = T[-1, -1] = 1.0
    return sp.csr_matrix(sp.kronsum(T.tocsr(), T.tocsr()))


def test_a_neumann_matrix_file_without_b_is_solved_not_reported_trivially(tmp_path):
    A = _neumann(20)
    assert np.abs(A @ np.ones(A.shape[0])).max() == 0.0   # A 1 = 0: singular
    sio.mmwrite(str(tmp_path / "neumann.mtx"), A)
    log = _Log()
    sol = run_matrix_file({"problem": str(tmp_path / "neumann.mtx"), "method": "cg",
                           "precond": "amg", "rtol": 1e-10}, log)
    x = np.asarray(sol.x).ravel()
    assert sol.iterations >= 1 and sol.converged   # HEAD: 0 iterations, x = 0
    assert np.abs(x - x.mean()).max() > 0.1   # not a constant: a non-trivial b
    # x solves A x = b up to the constant, b = A x_e: the reported error is small (HEAD: 1)
    assert sol.error is not None and sol.error <= 1e-6, sol.error
    assert any("defined up to a constant" in line for line in log.lines), log.lines


def test_a_matrix_file_whose_rows_do_not_sum_to_zero_keeps_b_a_ones(tmp_path):
    A = _neumann(12) + sp.identity(144)
    sio.mmwrite(str(tmp_path / "a.mtx"), A)
    log = _Log()
    sol = run_matrix_file({"problem": str(tmp_path / "a.mtx"), "method": "cg",
                           "precond": "none", "rtol": 1e-10}, log)
    np.testing.assert_allclose(np.asarray(sol.x).ravel(), 1.0, atol=1e-7)
    assert sol.error <= 1e-7 and "b = A 1" in log.lines[0]

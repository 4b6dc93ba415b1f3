"""Round 35: the summary of a stopped solve of several right-hand sides. It read "cg +
jacobi, 200 unknowns: cancelled after 238 iterations, |r|/|b| = 5.16": the current column's
residual as the whole solve's, with no word of the column already solved. Now it says how
many columns were solved, where it stopped, and how many were not started. Oracle: the
residuals numpy computes from the kept ``partial.npz``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from skiff.jobs.worker import keep_partial
from skiff.kernels.backend.report import JobCancelled
from skiff.kernels.solve.solver import Solver
from skiff.kinds.solve import KIND
from tests.helpers.stop_at import StopAtLook


def _stopped(tmp_path, k_stop, columns=3):
    n = 200
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    B = np.column_stack([np.cos(np.arange(n) * 0.07 * (c + 1)) + 1 for c in range(columns)])
    with pytest.raises(JobCancelled) as info:
        Solver(A, method="cg", precond="jacobi").solve(B, reporter=StopAtLook(k_stop))
    keep_partial(tmp_path, info.value, StopAtLook(10**9), "cancelled")
    doc = json.loads((tmp_path / "result.json").read_text())
    X = np.load(tmp_path / "partial.npz")["x"]
    rel = [np.linalg.norm(B[:, c] - A @ X[:, c]) / np.linalg.norm(B[:, c])
           for c in range(columns)]
    return doc, rel


def test_the_line_names_the_columns_solved_the_current_and_those_left(tmp_path):
    doc, rel = _stopped(tmp_path, 150)
    (line,) = KIND.summary(doc)
    done = doc["columns_done"]
    assert done == 1 and rel[0] < 1e-8 < rel[1]          # the oracle agrees on the state
    assert "3 right-hand sides" in line and "1 of 3 solved" in line
    assert "stopped in the 2nd" in line and "1 not started" in line
    shown = float(line.split("at |r|/|b| = ")[1].split(";")[0])
    assert shown == pytest.approx(rel[1], rel=5e-3)       # the current column's residual
    worst = float(line.split("|r|/|b| <= ")[1].split(")")[0])
    assert worst == pytest.approx(rel[0], rel=5e-2)


def test_stopped_in_the_first_column(tmp_path):
    doc, rel = _stopped(tmp_path, 5, columns=2)
    (line,) = KIND.summary(doc)
    assert "0 of 2 solved;" in line and "stopped in the 1st" in line
    assert "1 not started" in line

"""The distributed GMRES counts ``maxiter`` in restart cycles, as SciPy's gmres and the serial
Solver (``restart=None`` is SciPy's 20): on 2 ranks the 1-rank result, and SciPy's x and info."""

from __future__ import annotations

import numpy as np
import pytest

from .test_distributed import run_mpi

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


@pytest.fixture(scope="module")
def runs():
    return {n: run_mpi(n, "dist_gmres_cycles.py")[0]["cases"] for n in (1, 2)}


@pytest.mark.parametrize("case,restart,maxiter", [("restart5-maxiter3", 5, 3),
                                                  ("restartNone-maxiter2", 20, 2)])
def test_gmres_maxiter_counts_cycles_on_two_ranks(runs, case, restart, maxiter):
    one, two = runs[1][case], runs[2][case]
    # SciPy stops after maxiter cycles of restart inner iterations, not converged: info > 0
    assert one["ref_info"] == maxiter
    for got in (one, two):
        assert not got["converged"]
        assert got["iterations"] == maxiter * restart and got["cycles"] == maxiter
        assert got["scipy_info"] == one["ref_info"]
        assert "counts cycles" in got["status"]
        # SciPy's x: to rounding (restart 5: 1e-15; restart 20: 1e-7, the serial Solver's too)
        assert got["vs_scipy"] < 1e-6, got["vs_scipy"]
    x1, x2 = np.array(one["x"]), np.array(two["x"])
    # the split sums round differently: 2e-9 after 40 unpreconditioned inner iterations
    assert np.abs(x1 - x2).max() <= 1e-8 * np.abs(x1).max()

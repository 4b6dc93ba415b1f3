"""MINRES distributed: on 2 ranks the serial Solver's iterations and x, and SciPy's spsolve."""

from __future__ import annotations

import pytest

from .test_distributed import run_mpi

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


@pytest.fixture(scope="module")
def two_ranks():
    return run_mpi(2, "dist_minres.py")[0]["cases"]


@pytest.mark.parametrize("case", ["poisson-mg", "jump-jacobi", "poisson3d-none"])
def test_minres_on_two_ranks_is_the_serial_one(two_ranks, case):
    got = two_ranks[case]
    assert got["converged"] and got["method"] == "minres"
    assert abs(got["iterations"] - got["serial_iterations"]) <= 1, got
    assert got["vs_serial"] < 1e-8, got
    assert got["vs_scipy"] < 1e-6, got

"""Distributed solves on real MPI ranks equal the one-rank solution (serial skiff and SciPy's
spsolve) and take the serial number of iterations on any number of ranks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[3]

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def run_mpi(np_: int, script: str, *args, timeout: float = 120.0) -> list[dict]:
    """``scripts/<script>`` on ``np_`` ranks; each rank prints ``RESULT {json}``."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    if not mpiexec.exists():
        pytest.skip("no mpiexec next to this Python")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    cmd = ["timeout", "-s", "KILL", str(int(timeout)), str(mpiexec), "-n", str(np_),
           sys.executable, str(HERE / "scripts" / script), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    decoder = json.JSONDecoder()
    results, text = [], proc.stdout
    pos = text.find("RESULT ")
    while pos >= 0:
        obj, end = decoder.raw_decode(text, pos + len("RESULT "))
        results.append(obj)
        pos = text.find("RESULT ", end)
    assert len(results) == np_, proc.stdout[-4000:]
    return sorted(results, key=lambda r: r["rank"])


@pytest.fixture(scope="module")
def two_ranks():
    return run_mpi(2, "dist_solve.py")


CASES = ["poisson-2d", "poisson-3d", "poisson-odd", "jump", "body", "neumann", "stationary-W",
         "jacobi", "tiny", "pipecg", "bicgstab", "gmres"]


@pytest.mark.parametrize("case", CASES)
def test_two_ranks_equal_the_one_rank_solution(two_ranks, case):
    got = two_ranks[0]["cases"][case]
    assert got["converged"] and got["ranks"] == 2
    # the same algorithm as the serial solver, split: same answer to rounding, same iterations
    assert abs(got["iterations"] - got["serial_iterations"]) <= 1, got
    assert got["vs_serial"] < 1e-9, got
    # and an independent reference: SciPy's direct solve, to the solver's tolerance
    assert got["vs_scipy"] < 1e-5 and got["vs_scipy"] < 20 * got["serial_vs_scipy"] + 1e-9, got
    assert got["halo_bytes"] > 0


@pytest.mark.parametrize("case", ["poisson-2d", "poisson-3d", "poisson-odd"])
def test_subdomains_cover_the_grid_once(two_ranks, case):
    import numpy as np

    got = two_ranks[0]["cases"][case]
    cover = np.zeros(got["shape"], dtype=int)
    for sub in got["subdomains"]:
        cover[tuple(slice(lo, hi) for lo, hi in sub["index"])] += 1
        assert sub["cells"] == int(np.prod([hi - lo for lo, hi in sub["index"]]))
    assert len(got["subdomains"]) == 2 and (cover == 1).all()


def test_halo_bytes_count_what_each_rank_sends(two_ranks):
    for r in two_ranks:
        assert r["one_exchange"]["counted"] == r["one_exchange"]["expected"] > 0, r

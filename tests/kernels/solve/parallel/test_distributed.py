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
def rows_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("rows")


@pytest.fixture(scope="module")
def launch(rows_dir):
    """One mpiexec of 2 ranks for this file's checks (``scripts/dist_all.py``: the grid
    solves, MINRES, GMRES's cycles on 2 ranks and on one, the row split's BiCGStab). Round
    43: the MINRES, GMRES and row-split checks were in three more files with four launches of
    their own (16.5 CPU s in all)."""
    return run_mpi(2, "dist_all.py", rows_dir, timeout=240)


@pytest.fixture(scope="module")
def two_ranks(launch):
    return [r["solve"] for r in launch]


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


# MINRES distributed (was test_dist_minres.py): on 2 ranks the serial Solver's iterations and x,
# and SciPy's spsolve
@pytest.mark.parametrize("case", ["poisson-mg", "jump-jacobi", "poisson3d-none"])
def test_minres_on_two_ranks_is_the_serial_one(launch, case):
    got = launch[0]["minres"]["cases"][case]
    assert got["converged"] and got["method"] == "minres"
    assert abs(got["iterations"] - got["serial_iterations"]) <= 1, got
    assert got["vs_serial"] < 1e-8, got
    assert got["vs_scipy"] < 1e-6, got


# The distributed GMRES counts ``maxiter`` in restart cycles, as SciPy's gmres and the serial
# Solver (``restart=None`` is SciPy's 20): on 2 ranks the 1-rank result, and SciPy's x and info
# (was test_dist_gmres_cycles.py)
@pytest.mark.parametrize("case,restart,maxiter", [("restart5-maxiter3", 5, 3),
                                                  ("restartNone-maxiter2", 20, 2)])
def test_gmres_maxiter_counts_cycles_on_two_ranks(launch, case, restart, maxiter):
    import numpy as np

    one, two = launch[0]["gmres_one"]["cases"][case], launch[0]["gmres"]["cases"][case]
    assert launch[0]["gmres_one"]["size"] == 1 and launch[0]["gmres"]["size"] == 2
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


def test_row_solve_on_two_mpi_ranks(launch, rows_dir):
    """The row split (``parallel/rows.py``) on 2 MPI ranks: BiCGStab + Jacobi on a shuffled
    convection-diffusion matrix, each rank's x = spsolve's (was test_rows_r39h7.py's, its own
    launch of ``scripts/rows_mpi.py``)."""
    import numpy as np
    import scipy.sparse.linalg as spla

    from .thread_ranks import shuffled_laplacian

    A = shuffled_laplacian(20, convect=4.0)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    ref = spla.spsolve(A.tocsc(), b)
    for rank in (0, 1):
        got = np.load(rows_dir / f"rank{rank}.npz")
        assert int(got["size"]) == 2 and int(got["info"]) == 0
        assert np.linalg.norm(got["x"] - ref) <= 1e-7 * np.linalg.norm(ref)

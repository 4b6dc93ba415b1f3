"""Round 32: a plan measures the matmul rate at the BLAS threads its ranks will run on, and
a rank's ``limit_threads`` limits numpy's BLAS without threadpoolctl (not in the venv).

Before, ``plan.measure_flops`` ran at the planning process's threads: a dry run of ``--np
2`` in a shell whose BLAS had both cores read 6-11 GFLOP/s on a loaded host where one
thread (each rank's share) read ~105, and predicted gpt-mini's step 0.874 s against 0.061
s; ``limit_threads`` left the BLAS of a rank started by a bare ``mpiexec`` on every core.
The oracle is OpenBLAS's own count, read here through its C symbol (not skiff's module).
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
import pytest

from skiff.kernels.backend import cpu_count
from skiff.kernels.train.plan import planner


def _openblas():
    libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(np.__file__)),
                                  "numpy.libs", "*openblas*.so*"))
    for path in libs:
        lib = ctypes.CDLL(path)
        if hasattr(lib, "scipy_openblas_get_num_threads64_"):
            get, put = (lib.scipy_openblas_get_num_threads64_,
                        lib.scipy_openblas_set_num_threads64_)
            get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
            return get, put
    pytest.skip("numpy here does not use its bundled scipy_openblas")


@pytest.fixture
def blas():
    # measure_flops keeps its last readings: a plan made earlier in this process (another
    # test file in the same pytest worker) would leave nothing measured here
    planner.measure_flops.cache_clear()
    get, put = _openblas()
    before = get()
    put(2)  # a shell's BLAS on 2 threads, whatever this test process was started with
    yield get
    put(before)


class _Clock:
    """``time`` for the planner: records BLAS's thread count at every reading."""

    def __init__(self, get):
        self.get, self.seen = get, []

    def perf_counter(self):
        import time

        self.seen.append(self.get())
        return time.perf_counter()


def test_a_plan_for_ranks_measures_at_a_ranks_threads(blas, monkeypatch):
    clock = _Clock(blas)
    monkeypatch.setattr(planner, "time", clock)
    world = max(2, cpu_count())  # each rank's share: one thread
    cluster = planner.cluster_for(None, world_size=world)
    assert cluster.flops > 0
    assert clock.seen and set(clock.seen) == {1}
    assert blas() == 2  # the planning process's count is put back


def test_one_process_measures_at_its_own_threads(blas, monkeypatch):
    clock = _Clock(blas)
    monkeypatch.setattr(planner, "time", clock)
    planner.cluster_for(None, world_size=1)
    assert set(clock.seen) == {2}
    assert blas() == 2


def test_limit_threads_limits_numpys_blas(blas):
    from skiff.kernels.backend.split import set_work_threads
    from skiff.kernels.train.parallel.groups import limit_threads

    try:
        assert limit_threads(1) == 1
        assert blas() == 1
    finally:
        set_work_threads(None)

"""Round 48 (h4): a rank's thread limit leaves numba unimported until a kernel needs it.

Every data-parallel rank of 2 or more calls ``limit_threads`` when its strategy binds; it
imported numba (and scipy with it) only to set numba's thread count: ~0.3 CPU s a rank
(``mpiexec -n 2`` of ``scripts/user_ranks_r48h4_check.py``: 1.99 and 2.13 -> 1.44 and 1.48
CPU s, both ranks). Where numba is not imported yet it now sets ``NUMBA_NUM_THREADS``,
which numba reads when it is imported (never raised: a smaller value stays; not set where
n is numba's own default, one thread a CPU); an imported numba is still limited directly.
BLAS and skiff's own element-wise threads are stubbed here (the test leaves the process's
as they were)."""

from __future__ import annotations

import os
import sys
import types

import pytest

from skiff.kernels.train.parallel import groups


@pytest.fixture
def calls(monkeypatch):
    """What limit_threads asks of BLAS and skiff's element-wise passes, recorded."""
    seen = []
    threadpoolctl = types.ModuleType("threadpoolctl")
    threadpoolctl.threadpool_limits = lambda n: seen.append(("blas", n))
    monkeypatch.setitem(sys.modules, "threadpoolctl", threadpoolctl)
    monkeypatch.setattr("skiff.kernels.backend.split.set_work_threads",
                        lambda n: seen.append(("work", n)))
    return seen


@pytest.mark.parametrize("n, before, after", [
    (2, None, "2"), (2, "8", "2"), (2, "1", "1"), (2, "x", "2"),
    (8, None, None)])  # all 8 CPUs: numba's own default, the variable left unset
def test_numba_not_imported_is_capped_by_the_variable_it_reads(monkeypatch, calls, n, before,
                                                               after):
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    if before is None:
        monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("NUMBA_NUM_THREADS", before)
    assert groups.limit_threads(n) == n
    assert "numba" not in sys.modules  # imported before: ~0.7 CPU s a rank
    assert os.environ.get("NUMBA_NUM_THREADS") == after
    assert calls == [("work", n), ("blas", n)]


def test_an_imported_numba_is_limited_directly(monkeypatch, calls):
    numba = types.ModuleType("numba")
    numba.config = types.SimpleNamespace(NUMBA_NUM_THREADS=3)
    numba.set_num_threads = lambda n: calls.append(("numba", n))
    monkeypatch.setitem(sys.modules, "numba", numba)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "3")
    groups.limit_threads(8)
    assert calls == [("work", 8), ("blas", 8), ("numba", 3)]  # never past its pool
    groups.limit_threads(2)
    assert calls[-1] == ("numba", 2)

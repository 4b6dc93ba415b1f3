"""The rank alarm's watcher thread runs only under MPI_THREAD_MULTIPLE; below it, a failing
rank aborts the job instead (an Iprobe beside a collective is undefined there)."""

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skiff.kernels.train.parallel.rank_alarm import AbortOnError, threads_allowed

ROOT = Path(__file__).resolve().parents[4]


class _MPI:
    THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3

    def __init__(self, level):
        self.level = level

    def Query_thread(self):
        if self.level is None:
            raise RuntimeError("MPI not initialised")
        return self.level


@pytest.mark.parametrize("level,ok", [(0, False), (1, False), (2, False), (3, True),
                                      (None, False)])
def test_watcher_only_under_thread_multiple(level, ok):
    assert threads_allowed(_MPI(level)) is ok


def test_real_mpi_level_decides():
    """In a process of its own: importing mpi4py.MPI makes the test worker an MPI process for
    the rest of its life (a thread, descriptors, C signal handlers, MPI's shutdown at exit)."""
    pytest.importorskip("mpi4py")
    code = ("from mpi4py import MPI\n"
            "from skiff.kernels.train.parallel.rank_alarm import threads_allowed\n"
            "assert threads_allowed(MPI) == (MPI.Query_thread() == MPI.THREAD_MULTIPLE)\n"
            "print('checked', MPI.Query_thread())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0 and "checked" in done.stdout, done.stderr[-2000:]


class _Comm:
    def __init__(self):
        self.aborted = None

    def Get_rank(self):
        return 1

    def Get_size(self):
        return 2

    def Abort(self, code):
        self.aborted = code


def test_abort_guard_aborts_on_own_failure_with_traceback():
    comm, out = _Comm(), io.StringIO()
    with pytest.raises(ValueError):
        with AbortOnError(comm, out=out):
            raise ValueError("bad batch shape (3, 5)")
    assert comm.aborted == 1
    text = out.getvalue()
    assert "ValueError: bad batch shape (3, 5)" in text and "Traceback" in text
    assert "rank 1" in text and "2 ranks" in text


def test_abort_guard_leaves_agreed_failures_and_success_alone():
    comm = _Comm()
    with AbortOnError(comm, out=io.StringIO()):
        pass
    assert comm.aborted is None
    err = FloatingPointError("loss is nan at step 3")
    err.all_ranks = True
    with pytest.raises(FloatingPointError):
        with AbortOnError(comm, out=io.StringIO()):
            raise err
    assert comm.aborted is None

"""Round 34 (h5): the rank alarm's signal pipe is closed by whichever of the guarded block's
end and the watcher thread comes last. The block's end joined the watcher for 1 s only and
then closed the pipe; a watcher still running (a slow ``Iprobe`` on a loaded machine) then
selected on and read a descriptor number that a later ``open()`` in the process reused (in
an xdist worker: another test's file or the worker's own channel). No MPI here: a fake
communicator and a fake ``mpi4py.MPI`` (importing the real one makes the pytest process an
MPI singleton)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import types

import pytest

from skiff.kernels.train.parallel import rank_alarm


class _Comm:
    """Its Iprobe holds the watcher until ``release`` is set (a watcher that outlives the
    join), then says no alarm."""

    def __init__(self):
        self.release = threading.Event()
        self.probing = threading.Event()

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 2

    def Iprobe(self, **kw):
        self.probing.set()
        self.release.wait(10)
        return False


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


@pytest.fixture
def fake_mpi(monkeypatch):
    mpi = types.SimpleNamespace(Status=lambda: types.SimpleNamespace(Get_source=lambda: 1),
                                ANY_SOURCE=-1)
    monkeypatch.setitem(sys.modules, "mpi4py", types.SimpleNamespace(MPI=mpi))
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", mpi)
    monkeypatch.setattr(rank_alarm, "_parent_comm", lambda: None)
    monkeypatch.setattr(rank_alarm, "JOIN_S", 0.05)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="the wake-up pipe is set from the main thread only")
def test_a_watcher_that_outlives_the_join_keeps_its_pipe_until_it_ends(fake_mpi):
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        pytest.skip("no Python SIGINT handler: no wake-up pipe")
    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    comm = _Comm()
    alarm = rank_alarm.RankAlarm(comm, leave=lambda code: None)
    with alarm:
        assert alarm._wakeup is not None
        r, w = alarm._wakeup
        assert comm.probing.wait(5)
    # the block ended; the watcher is still in Iprobe (held past the join)
    assert alarm._thread.is_alive()
    assert signal.set_wakeup_fd(before) == before  # the old wake-up fd is back at once
    # before: both ends were closed here and their numbers free for the next open()
    assert _fd_open(r) and _fd_open(w)
    comm.release.set()
    alarm._thread.join(5)
    assert not alarm._thread.is_alive()
    assert alarm._wakeup is None
    # closed by the watcher on its way out


def test_a_watcher_that_ended_in_time_has_its_pipe_closed_by_the_block(fake_mpi):
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        pytest.skip("no wake-up pipe here")
    comm = _Comm()
    comm.release.set()
    alarm = rank_alarm.RankAlarm(comm, leave=lambda code: None)
    with alarm:
        r, w = alarm._wakeup
    alarm._thread.join(5)
    assert alarm._wakeup is None
    assert not _fd_open(r) and not _fd_open(w)

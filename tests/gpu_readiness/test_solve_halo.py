"""The distributed solver's halo exchange with GPU (device) arrays, without a GPU: two ranks
in threads over an in-memory MPI stand-in, blocks as :mod:`.fakecupy` device arrays.

* MPI not CUDA-aware (the default): no device array reaches MPI, faces go through host
  buffers and come back as device data;
* ``SKIFF_CUDA_AWARE_MPI=1``: device buffers go to MPI as they are, after the stream is
  synchronised.
"""

from __future__ import annotations

import threading
import types

import numpy as np
import pytest

from skiff.kernels.solve.parallel.decompose import Decomposition
from skiff.kernels.solve.parallel.halo import Halo, SelfComm

from . import fakecupy
from .fakecupy import DeviceArray


class _Request:
    def __init__(self, wait):
        self.wait = wait


class _Wire:
    """A mailbox between ranks in threads; records what MPI was handed."""

    def __init__(self):
        self.cond = threading.Condition()
        self.box = {}
        self.handed = []

    def comm(self, rank):
        wire = self

        class _Comm:
            def Isend(self, buf, dest, tag):
                wire.handed.append(type(buf))
                with wire.cond:
                    wire.box[(rank, dest, tag)] = np.array(buf)
                    wire.cond.notify_all()
                return _Request(lambda: None)

            def Irecv(self, buf, source, tag):
                wire.handed.append(type(buf))

                def wait():
                    with wire.cond:
                        assert wire.cond.wait_for(lambda: (source, rank, tag) in wire.box, 5)
                        buf[...] = wire.box.pop((source, rank, tag))
                return _Request(wait)

        return _Comm()


def _solve_comm(wire, rank, size):
    comm = SelfComm()
    comm.rank, comm.size, comm.comm = rank, size, wire.comm(rank)
    comm._mpi = types.SimpleNamespace(Request=types.SimpleNamespace(
        Waitall=lambda reqs: [r.wait() for r in reqs]))
    return comm


def _fake_cupy(synced):
    cp = fakecupy.make()
    cp.moveaxis = lambda a, *args: np.moveaxis(a, *args)
    cp.cuda = types.SimpleNamespace(get_current_stream=lambda: types.SimpleNamespace(
        synchronize=lambda: synced.append(1)))
    return cp


@pytest.mark.parametrize("aware", ["0", "1"])
def test_device_blocks_exchange_their_faces(monkeypatch, aware):
    monkeypatch.setenv("SKIFF_CUDA_AWARE_MPI", aware)
    monkeypatch.setattr(DeviceArray, "get", lambda self: np.array(self).view(np.ndarray),
                        raising=False)
    shape3 = (1, 8, 6)
    dec = Decomposition(shape3, 2)               # split along the 8 cells: 4 + 4
    grid = np.arange(48.0).reshape(shape3)
    wire, synced = _Wire(), []
    cp = _fake_cupy(synced)
    blocks = []
    for r in range(2):
        (lo0, hi0), (lo1, hi1), (lo2, hi2) = dec.block(r)
        u = np.zeros((1, hi1 - lo1 + 2, hi2 - lo2 + 2))
        u[0, 1:-1, 1:-1] = grid[0, lo1:hi1, lo2:hi2]
        halo = Halo(_solve_comm(wire, r, 2), u.shape, (0, 1, 1), dec.neighbours(r),
                    np.array([1, 1, -1, -1, 1, 1.0]), xp=cp)
        blocks.append((u.view(DeviceArray), halo))
    results = [None, None]

    def run(r):
        u, halo = blocks[r]
        results[r] = halo.exchange(u, "signs")

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    low, high = (np.asarray(results[r]) for r in range(2))
    np.testing.assert_array_equal(low[0, -1, 1:-1], grid[0, 4])    # rank 1's first row
    np.testing.assert_array_equal(high[0, 0, 1:-1], grid[0, 3])    # rank 0's last row
    np.testing.assert_array_equal(low[0, 0, 1:-1], -grid[0, 0])    # Dirichlet side: -edge
    np.testing.assert_array_equal(low[0, 1:-1, 0], grid[0, 0:4, 0])  # Neumann side: +edge
    assert all(isinstance(r, DeviceArray) for r in results)
    if aware == "1":
        assert DeviceArray in wire.handed and synced
    else:
        assert DeviceArray not in wire.handed, wire.handed
    assert blocks[0][1].comm.halo_bytes == 8 * 8   # one face of 6 cells + 2 ghosts

"""NCCLComm's streams, events and messages on a simulated GPU (``fakenccl``): two ranks in
threads, NCCL point-to-point that completes only when both sides reach it on their streams.

* two neighbours that send to each other and then receive (the 1F1B pipeline's steady state)
  both finish; the same exchange with both directions on one queue deadlocks, as it would on
  a GPU (so the test can fail);
* ``isend`` returns before the peer receives, and its handle says so (``test``);
* an all-reduce runs on the communicator's stream after the caller's work and is joined back
  without the host waiting;
* NCCL has no tags: the tag travels with the message and a receive posted out of order fails
  with both tags named instead of swapping tensors;
* ``auto`` picks NCCL for GPU ranks, MPI for CPU ranks, one rank alone, and says why.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import skiff.kernels.backend as backend
from skiff.kernels.train.parallel import NCCLComm
from skiff.kernels.train.parallel.world import choose_engine

from . import fakenccl
from .fakenccl import Deadlock, device


@pytest.fixture
def gpu(monkeypatch):
    sim = fakenccl.GPU(timeout=1.0)
    cp = fakenccl.make_cupy(sim)
    nccl = fakenccl.make_nccl(sim)
    monkeypatch.setattr(backend, "cupy", lambda: cp)
    cuda = types.ModuleType("cupy.cuda")
    cuda.nccl = nccl
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", nccl)
    sim.cp = cp
    return sim


def _pair(**kw):
    shared: dict = {}
    return fakenccl.run_ranks([lambda r=r: NCCLComm(fakenccl.HostPair(shared, r, 2), **kw)
                               for r in range(2)])


def _data(rank):
    return np.random.default_rng(rank).standard_normal(5).astype(np.float32)


def _exchange(comms, rounds=3):
    def rank_fn(r):
        def run():
            comm, peer, got = comms[r], 1 - r, []
            for i in range(rounds):
                sent = comm.isend(device(_data(r) + i), peer, tag=i)
                got.append(np.asarray(comm.recv(device(np.empty(5, np.float32)), peer, tag=i)))
                sent.wait()
            return got
        return run

    return fakenccl.run_ranks([rank_fn(0), rank_fn(1)])


def test_neighbours_that_send_to_each_other_both_finish(gpu):
    comms = _pair()
    got = _exchange(comms)
    for r in range(2):
        for i in range(3):
            np.testing.assert_array_equal(got[r][i], _data(1 - r) + i)
    # messages to the higher rank and to the lower rank went over different communicators
    sends = {(src, dst): (uid, stream) for op, uid, src, dst, stream in gpu.launched
             if op == "send"}
    assert sends[(0, 1)][0] != sends[(1, 0)][0]
    assert sends[(0, 1)][1] == comms[0]._streams["up"].ptr
    assert sends[(1, 0)][1] == comms[1]._streams["down"].ptr


def test_one_queue_for_both_directions_would_deadlock(gpu, monkeypatch):
    comms = _pair()
    monkeypatch.setattr(NCCLComm, "_lane", staticmethod(lambda src, dst: "up"))
    with pytest.raises(Deadlock):
        _exchange(comms, rounds=1)


def test_isend_returns_before_the_peer_receives(gpu):
    c0, c1 = _pair()
    waits = len(gpu.host_waits)
    handle = c0.isend(device(_data(0)), 1, tag=3)
    assert not handle.test()  # posted, not delivered: nobody receives yet
    assert len(gpu.host_waits) == waits  # and the host did not wait for it
    got = c1.recv(device(np.empty(5, np.float32)), 0, tag=3)
    assert handle.test()
    np.testing.assert_array_equal(np.asarray(got), _data(0))
    handle.wait()


def test_allreduce_is_fenced_on_the_communicators_stream_and_joined_back(gpu):
    c0, _ = _pair()
    current = gpu.current_stream()
    coll = c0._streams["coll"]
    gpu.log.clear()
    waits = len(gpu.host_waits)
    handle = c0.iallreduce_(device(np.ones(4, np.float32)))
    (s1, k1, ready), (s2, k2, ready2), (s3, k3, done) = gpu.log
    assert (s1, k1) == (current.ptr, "record")  # the caller's work so far...
    assert (s2, k2, ready2) == (coll.ptr, "wait", ready)  # ...before the all-reduce
    assert (s3, k3) == (coll.ptr, "record")
    assert gpu.launched[-1][0] == "allReduce" and gpu.launched[-1][-1] == coll.ptr
    handle.wait()
    assert gpu.log[-1] == (current.ptr, "wait", done)  # the caller's next work waits for it
    assert len(gpu.host_waits) == waits  # the host never did


def test_a_receive_out_of_order_names_both_tags(gpu):
    c0, c1 = _pair()
    first = c0.isend(device(_data(0)), 1, tag=0)
    c0.isend(device(_data(1)), 1, tag=1)
    with pytest.raises(RuntimeError, match="waited for tag 1 from rank 0, but the next message "
                                           "on that link carries tag 0"):
        c1.recv(device(np.empty(5, np.float32)), 0, tag=1)
    assert first.test()


def test_the_tag_check_can_be_turned_off(gpu):
    c0, c1 = _pair(check_tags=False)
    c0.isend(device(_data(0)), 1, tag=0)
    got = c1.recv(device(np.empty(5, np.float32)), 0, tag=9)  # order, not tags, matches
    np.testing.assert_array_equal(gpu.cp.asnumpy(got), _data(0))


@pytest.mark.parametrize("device_,size,nccl,local,gpus,engine,why", [
    ("cpu", 1, True, 1, 0, "self", "one rank"), ("cuda:0", 1, True, 1, 1, "self", "one rank"),
    ("cpu", 4, True, 2, 0, "mpi", "4 ranks on the CPU"),
    ("cuda:1", 2, True, 2, 2, "nccl", "2 GPU ranks: gradients and activations over NCCL"),
    ("cuda:0", 8, True, 4, 4, "nccl", "8 GPU ranks"),  # 2 nodes of 4
    ("cuda:0", 2, False, 2, 2, "mpi", "cannot load libnccl"),
    ("cuda:0", 2, True, 2, 1, "mpi", "2 ranks share 1 GPU(s)")])  # NCCL: one GPU per rank
def test_auto_engine(device_, size, nccl, local, gpus, engine, why):
    got, reason = choose_engine(device_, size, nccl=nccl, local_size=local, gpus=gpus)
    assert got == engine and why in reason, reason

"""Host/device hand-offs around the GPU paths, checked with :mod:`.fakecupy` device arrays.

* MPI is not assumed CUDA-aware: :class:`MPIComm` must hand MPI host buffers only and give
  device arrays back for device arrays in.
* :class:`NCCLComm` sends host arrays (metrics) through MPI and checks that NCCL loads.
* ``--device auto`` gives each rank of a node its own GPU.
* An autograd op that meets a device array and a host array moves the host one over.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import skiff.kernels.backend as backend
from skiff.kernels.backend import devices, launch_env

from . import fakecupy, fakenccl
from .fakecupy import DeviceArray, dev


@pytest.fixture
def fake(monkeypatch):
    cp = fakecupy.make()
    monkeypatch.setattr(backend, "cupy", lambda: cp)
    return cp


class _HostOnlyMPI:
    """Wraps an mpi4py communicator; fails on any device array handed to MPI."""

    def __init__(self, comm):
        self._comm = comm

    def __getattr__(self, name):
        attr = getattr(self._comm, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            _no_device(args)
            _no_device(tuple(kwargs.values()))
            return attr(*args, **kwargs)

        return call


def _no_device(values):
    for v in values:
        if isinstance(v, DeviceArray):
            raise AssertionError("a device array reached MPI")
        if isinstance(v, (list, tuple)):
            _no_device(v)


@pytest.fixture
def mpi_comm(fake):
    pytest.importorskip("mpi4py")
    from skiff.kernels.train.parallel import MPIComm

    comm = MPIComm()
    if comm.size != 1:
        pytest.skip("runs on one rank")
    comm.mpi = _HostOnlyMPI(comm.mpi)
    return comm


def test_mpi_comm_stages_device_arrays_through_the_host(mpi_comm):
    x = dev(np.arange(6.0), np.float32)
    same = mpi_comm.allreduce_(x, "mean")
    assert same is x and isinstance(x, DeviceArray)
    np.testing.assert_array_equal(np.asarray(x), np.arange(6.0))
    h = mpi_comm.iallreduce_(x, "sum")
    assert h.wait() is x
    for out, want in ((mpi_comm.allreduce(x), np.arange(6.0)),
                      (mpi_comm.reduce_scatter(x), np.arange(6.0)),
                      (mpi_comm.allgather(x), np.arange(6.0)[None]),
                      (mpi_comm.broadcast(x), np.arange(6.0)),
                      (mpi_comm.allgatherv(x)[0], np.arange(6.0)),
                      (mpi_comm.alltoallv(dev(np.ones((3, 2))), [3])[0], np.ones((3, 2)))):
        assert isinstance(out, DeviceArray), type(out)
        np.testing.assert_array_equal(np.asarray(out), want)
    counts = mpi_comm.allgatherv(x)[1]
    assert counts == [6] and type(counts) is list


def test_mpi_comm_host_arrays_stay_on_the_host(mpi_comm):
    out = mpi_comm.allreduce(np.arange(3.0))
    assert type(out) is np.ndarray


def test_nccl_comm_reports_a_missing_nccl_library(monkeypatch):
    """cupy imports ``cupy.cuda.nccl`` without libnccl, but the module is then empty."""
    import sys

    from skiff.kernels.train.parallel import NCCLComm, SelfComm

    cp = fakecupy.make()
    monkeypatch.setattr(backend, "cupy", lambda: cp)
    empty = types.ModuleType("cupy.cuda.nccl")
    empty.available = False
    fake_cuda = types.ModuleType("cupy.cuda")
    fake_cuda.nccl = empty
    monkeypatch.setitem(sys.modules, "cupy.cuda", fake_cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", empty)
    with pytest.raises(RuntimeError, match="nvidia-nccl-cu12"):
        NCCLComm(SelfComm())


def test_nccl_comm_routes_host_arrays_to_mpi(fake):
    """Metrics (numpy) go to the MPI communicator; device arrays never do."""
    from skiff.kernels.train.parallel import NCCLComm, SelfComm

    comm = NCCLComm.__new__(NCCLComm)
    comm.bytes_sent = comm.calls = 0
    comm._cp, comm._mpi, comm.rank, comm.size = fake, SelfComm(), 0, 1
    out = comm.allreduce(np.array([1.0, 2.0]), "mean")
    assert type(out) is np.ndarray and out.tolist() == [1.0, 2.0]
    assert comm.broadcast(np.array([3.0]), root=0).tolist() == [3.0]


@pytest.mark.parametrize("env,want", [({}, 0), ({"MPI_LOCALRANKID": "3"}, 3),
                                      ({"OMPI_COMM_WORLD_LOCAL_RANK": "1"}, 1),
                                      ({"SLURM_LOCALID": "2"}, 2)])
def test_local_rank(monkeypatch, env, want):
    for var in launch_env.LOCAL_RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert devices.local_rank() == want


def test_auto_device_is_the_local_ranks_gpu(monkeypatch):
    def gpu(i):
        return devices.Device(f"cuda:{i}", "gpu", "NVIDIA", "H100", i, 1, 1, 1)

    cpu = devices.Device("cpu", "cpu", "x", "x", 0, 1, 1, 1)
    monkeypatch.setattr(devices, "list_devices", lambda: [cpu, gpu(0), gpu(1)])
    for var in launch_env.LOCAL_RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    assert devices.resolve_device("auto").name == "cuda:0"
    monkeypatch.setenv("MPI_LOCALRANKID", "3")
    assert devices.resolve_device("auto").name == "cuda:1"
    assert devices.resolve_device("cuda:0").name == "cuda:0"  # an explicit choice stays
    monkeypatch.setattr(devices, "list_devices", lambda: [cpu])
    assert devices.resolve_device("auto").name == "cpu"


def test_autograd_moves_host_operands_to_the_device(monkeypatch, fake):
    import skiff.kernels.train.core.tensor  # noqa: F401  (the Tensor class the ops return)
    from skiff.kernels.train.core import autograd

    monkeypatch.setattr(autograd, "cupy", lambda: fake)
    seen = {}

    class Probe(autograd.Function):
        def forward(self, a, b):
            seen["types"] = (type(a), type(b))
            return a

        def backward(self, g):
            return g, None

    Probe.apply(dev(np.ones(2)), np.ones(2))
    assert seen["types"] == (DeviceArray, DeviceArray)
    Probe.apply(np.ones(2), np.ones(2))  # all on the host: nothing moves
    assert seen["types"] == (np.ndarray, np.ndarray)


# ---- NCCLComm against a recording stand-in for cupy.cuda.nccl ------------------------------------
class _FakeNccl(types.ModuleType):
    """cupy.cuda.nccl's names (constants, group calls, NcclCommunicator) that record calls
    with the argument order of cupy's NcclCommunicator methods."""

    def __init__(self):
        super().__init__("cupy.cuda.nccl")
        self.available = True
        self.calls = []
        for i, name in enumerate(("NCCL_FLOAT32", "NCCL_FLOAT64", "NCCL_FLOAT16", "NCCL_INT32",
                                  "NCCL_INT64", "NCCL_UINT8", "NCCL_SUM", "NCCL_MAX",
                                  "NCCL_MIN")):
            setattr(self, name, 100 + i)
        calls = self.calls

        class NcclCommunicator:
            def __init__(self, ndev, commId, rank):
                calls.append(("init", ndev, commId, rank))

            def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
                calls.append(("allReduce", sendbuf, recvbuf, count, datatype, op, stream))

            def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
                calls.append(("reduceScatter", sendbuf, recvbuf, recvcount, datatype, op,
                              stream))

            def allGather(self, sendbuf, recvbuf, count, datatype, stream):
                calls.append(("allGather", sendbuf, recvbuf, count, datatype, stream))

            def bcast(self, buff, count, datatype, root, stream):
                calls.append(("bcast", buff, count, datatype, root, stream))

            def send(self, sendbuf, count, datatype, peer, stream):
                calls.append(("send", sendbuf, count, datatype, peer, stream))

            def recv(self, recvbuf, count, datatype, peer, stream):
                calls.append(("recv", recvbuf, count, datatype, peer, stream))

        self.NcclCommunicator = NcclCommunicator
        self.groupStart = lambda: calls.append(("groupStart",))
        self.groupEnd = lambda: calls.append(("groupEnd",))
        self.get_unique_id = lambda: (1, 2, 3)


class _TwoRankHost:
    """The MPI side of a two-rank group seen from rank 0 (symmetric counts)."""

    rank, size = 0, 2

    def __init__(self):
        self.mpi = types.SimpleNamespace(alltoall=lambda counts: list(counts))
        self.host_calls = []

    def bcast_object(self, obj, root=0):
        return obj

    def allgather_object(self, obj):
        return [obj, obj]

    def allreduce_(self, x, op="sum"):
        self.host_calls.append("allreduce_")
        return x


@pytest.fixture
def nccl_comm(monkeypatch):
    import sys

    from skiff.kernels.train.parallel import NCCLComm

    cp = fakenccl.make_cupy(fakenccl.GPU())
    monkeypatch.setattr(backend, "cupy", lambda: cp)
    fake = _FakeNccl()
    cuda = types.ModuleType("cupy.cuda")
    cuda.nccl = fake
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nccl", fake)
    comm = NCCLComm(_TwoRankHost())
    # three communicators: collectives, messages to higher ranks, messages to lower ranks
    assert fake.calls == [("init", 2, (1, 2, 3), 0)] * 3
    fake.calls.clear()
    return comm, fake


def test_nccl_collectives_pass_pointers_counts_and_types(nccl_comm):
    comm, nccl = nccl_comm
    x = dev(np.arange(6.0), np.float32)
    comm.allreduce_(x, "max")
    out = comm.reduce_scatter(x)
    every = comm.allgather(dev(np.ones((2, 3)), np.float64))
    b = comm.broadcast(x, root=1)
    ptr, coll = x.data.ptr, comm._streams["coll"].ptr
    assert nccl.calls[0] == ("allReduce", ptr, ptr, 6, nccl.NCCL_FLOAT32, nccl.NCCL_MAX, coll)
    name, send, recv, count, dtype, op, stream = nccl.calls[1]
    assert (name, send, recv, count, dtype, op) == (
        "reduceScatter", ptr, out.data.ptr, 3, nccl.NCCL_FLOAT32, nccl.NCCL_SUM)
    assert out.shape == (3,)
    name, _, recv, count, dtype, _ = nccl.calls[2]
    assert (name, recv, count, dtype) == ("allGather", every.data.ptr, 6, nccl.NCCL_FLOAT64)
    assert every.shape == (2, 2, 3)
    assert nccl.calls[3] == ("bcast", b.data.ptr, 6, nccl.NCCL_FLOAT32, 1, coll)
    assert {c[-1] for c in nccl.calls} == {coll}  # all on the collectives' stream


def test_nccl_non_contiguous_allreduce_is_refused(nccl_comm):
    comm, _ = nccl_comm
    with pytest.raises(ValueError, match="C-contiguous"):
        comm.allreduce_(dev(np.ones((4, 4)), np.float32)[:, 1])


def test_nccl_host_arrays_go_to_mpi(nccl_comm):
    comm, nccl = nccl_comm
    comm.allreduce_(np.ones(3), "sum")
    assert comm._mpi.host_calls == ["allreduce_"] and nccl.calls == []


def test_nccl_alltoallv_keeps_its_own_rows_and_groups_the_peers(nccl_comm):
    comm, nccl = nccl_comm
    x = dev(np.arange(10.0).reshape(5, 2), np.float32)
    out, recv_counts = comm.alltoallv(x, [2, 3])
    assert recv_counts == [2, 3] and out.shape == (5, 2)
    np.testing.assert_array_equal(np.asarray(out[:2]), np.asarray(x[:2]))  # own rows, local
    kinds = [c[0] for c in nccl.calls]
    assert kinds == ["groupStart", "send", "recv", "groupEnd"]
    _, _, send_count, dtype, peer, _ = nccl.calls[1]
    assert (send_count, dtype, peer) == (6, nccl.NCCL_FLOAT32, 1)
    _, recv_ptr, recv_count, _, peer, _ = nccl.calls[2]
    assert (recv_ptr, recv_count, peer) == (out[2:].data.ptr, 6, 1)

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
from skiff.kernels.backend import devices

from . import fakecupy
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
    from skiff.kernels.train.dist import MPIComm

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

    from skiff.kernels.train.dist import NCCLComm, SelfComm

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
    from skiff.kernels.train.dist import NCCLComm, SelfComm

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
    for var in devices._LOCAL_RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert devices.local_rank() == want


def test_auto_device_is_the_local_ranks_gpu(monkeypatch):
    def gpu(i):
        return devices.Device(f"cuda:{i}", "gpu", "NVIDIA", "H100", i, 1, 1, 1)

    cpu = devices.Device("cpu", "cpu", "x", "x", 0, 1, 1, 1)
    monkeypatch.setattr(devices, "list_devices", lambda: [cpu, gpu(0), gpu(1)])
    for var in devices._LOCAL_RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    assert devices.resolve_device("auto").name == "cuda:0"
    monkeypatch.setenv("MPI_LOCALRANKID", "3")
    assert devices.resolve_device("auto").name == "cuda:1"
    assert devices.resolve_device("cuda:0").name == "cuda:0"  # an explicit choice stays
    monkeypatch.setattr(devices, "list_devices", lambda: [cpu])
    assert devices.resolve_device("auto").name == "cpu"


def test_autograd_moves_host_operands_to_the_device(monkeypatch, fake):
    import skiff.kernels.train.tensor  # noqa: F401  (registers Tensor with autograd)
    from skiff.kernels.train import autograd

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

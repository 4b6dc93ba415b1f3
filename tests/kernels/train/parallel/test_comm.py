"""The communicator on 1 (in process), 2 and 4 real MPI ranks, and the group layout."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.train.parallel import Layout, ProcessGroups, SelfComm, world

from .mpi_util import run_mpi

CHECKS = ["allreduce", "allreduce_max", "allreduce_mean", "iallreduce", "reduce_scatter",
          "allgather", "allgatherv", "allgatherv_counts", "broadcast", "alltoallv",
          "bcast_object", "agree_stop"]


def _script():
    path = Path(__file__).parent / "scripts" / "comm_check.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("comm_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_one_rank_runs_every_collective():
    res = _script().check(SelfComm())
    for name in CHECKS:
        assert res[name] is True, name
    assert res["allreduce_bytes"] == 0
    assert world().size == 1


def test_self_comm_rejects_bad_input():
    c = SelfComm()
    with pytest.raises(ValueError, match="unknown reduce op 'prod'"):
        c.allreduce(np.ones(2), "prod")
    with pytest.raises(ValueError, match="send_counts"):
        c.alltoallv(np.ones((3, 1)), [2])
    with pytest.raises(ValueError, match="ep=3 must divide dp=4"):
        Layout(dp=4, ep=3)
    with pytest.raises(ValueError, match="does not match the world"):
        ProcessGroups(c, Layout(dp=2))


def test_layout_coords():
    lay = Layout(dp=2, tp=2, pp=2, ep=2)
    seen = {lay.rank_of(**{k: v for k, v in lay.coords(r).items() if k != "ep"})
            for r in range(8)}
    assert seen == set(range(8))
    assert lay.coords(5) == {"pp": 1, "dp": 0, "tp": 1, "ep": 0}


@pytest.mark.mpi
@pytest.mark.parametrize("np_", [2, 4])
def test_collectives_on_mpi(np_):
    args = ("1", "1", "1") if np_ == 2 else ("2", "1", "1")
    results = run_mpi(np_, "comm_check.py", *args)
    for res in results:
        for name in [*CHECKS, "isend_irecv", "send_recv"]:
            assert res[name] is True, (res["rank"], name)
        # ring all-reduce volume: 2 n (p-1)/p bytes for 4000 bytes
        assert res["allreduce_bytes"] == int(2 * 4000 * (np_ - 1) / np_)
    if np_ == 4:  # tp=2 dp=2: tp pairs (0,1),(2,3); dp pairs (0,2),(1,3)
        for res in results:
            r = res["rank"]
            g = res["groups"]
            assert g["tp"][:2] == [2, (r // 2) * 4 + 1]
            assert g["dp"][:2] == [2, 2 + 2 * (r % 2)]
            assert g["pp"][0] == 1
            assert g["tp"][2] == res["coords"]["tp"]


def test_nccl_needs_a_gpu():
    from skiff.kernels.backend import gpu_available
    from skiff.kernels.train.parallel import NCCLComm

    if gpu_available():
        pytest.skip("a GPU is present: the gpu test covers NCCL")
    with pytest.raises(RuntimeError, match="NCCLComm needs a GPU"):
        NCCLComm(SelfComm())


@pytest.mark.gpu
def test_nccl_one_rank_collectives():
    from skiff.kernels.backend import cupy
    from skiff.kernels.train.parallel import MPIComm, NCCLComm

    cp = cupy()
    comm = NCCLComm(MPIComm())
    x = cp.arange(8, dtype=cp.float32)
    assert cp.allclose(comm.allreduce(x), x)
    assert cp.allclose(comm.allgather(x)[0], x)
    assert cp.allclose(comm.reduce_scatter(x), x)
    h = comm.iallreduce_(x.copy(), "mean")  # on the communicator's stream, joined on wait
    assert cp.allclose(h.wait(), x) and h.test()


@pytest.mark.gpu
@pytest.mark.mpi
def test_two_gpu_ranks_choose_their_engine_and_move_device_arrays():
    """2 ranks with device cuda: NCCL when each rank has its own GPU; on a one-GPU machine
    (NCCL refuses two ranks on one device) MPI with the arrays staged through host memory.
    Either way every collective and the send-then-receive exchange give numpy's answer."""
    from skiff.kernels.backend import cupy

    gpus = cupy().cuda.runtime.getDeviceCount()
    for res in run_mpi(2, "nccl_check.py", timeout=120):
        assert res["engine"] == ("NCCLComm" if gpus >= 2 else "MPIComm"), res
        for name in ("allreduce", "iallreduce_mean", "reduce_scatter", "allgather",
                     "alltoallv", "exchange"):
            assert res[name] is True, (res["rank"], name)


def test_the_job_info_names_the_communicator_and_why():
    from skiff.kernels.train.parallel.data_parallel import DataParallel

    class Reporter:
        def __init__(self):
            self.infos = []

        def info(self, **kw):
            self.infos.append(kw)

        def should_stop(self):
            return False

    rep = Reporter()
    DataParallel().bind(device="cpu", reporter=rep)
    assert {"communicator": "self", "communicator_why": "one rank: no communication"} in rep.infos

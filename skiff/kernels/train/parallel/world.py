"""The job's communicator: :func:`world` picks the engine (one rank, MPI or NCCL) from how the
job was launched and which device it trains on, once per process.

Two checks happen here, at start-up, on every rank:

* :func:`check_launch` (from :mod:`skiff.kernels.backend.launch_env`): the MPI world must be
  as large as the launcher says. ``srun`` without an MPI plugin (``--mpi=none``, the default
  on many sites) starts N processes that each see a one-rank MPI world; without this check
  each would train the whole job alone and write checkpoints as rank 0. The worker calls it
  before the job's code runs.
* :func:`choose_engine`: ``auto`` on a GPU device with more than one rank is NCCL (arrays
  stay on the GPUs; MPI carries the control messages); on the CPU it is MPI. The answer and
  its reason go into the job's info (``communicator``, ``communicator_why``).
"""

from __future__ import annotations

from skiff.kernels.backend.launch_env import (
    LaunchMismatch,
    check_launch,
    launch_env,
    launched_by_mpi,
)

from .comm import Comm, MPIComm, SelfComm
from .nccl import NCCLComm, nccl_available

__all__ = ["world", "check_launch", "choose_engine", "LaunchMismatch", "ENGINES"]

ENGINES = ("auto", "self", "mpi", "nccl")

_WORLD: Comm | None = None  # the control (host) communicator: SelfComm or MPIComm
_NCCL: NCCLComm | None = None  # the device communicator over it, made on first GPU use


def _is_gpu(device) -> bool:
    if device is None:
        return False
    if hasattr(device, "is_gpu"):
        return bool(device.is_gpu)
    return str(device).split(":")[0] in ("cuda", "gpu")


def choose_engine(device, size: int, *, nccl: bool | None = None, local_size: int = 1,
                  gpus: int | None = None) -> tuple[str, str]:
    """``(engine, why)`` for ``auto``: a pure decision, shown in the job's info.

    ``nccl``: whether cupy can load libnccl (default: ask, only for a GPU with >1 rank);
    ``local_size``: ranks on this node; ``gpus``: GPUs this node's ranks can see (default:
    ask cupy). NCCL needs one GPU per rank: ranks sharing a GPU stay on MPI.
    """
    if size <= 1:
        return "self", "one rank: no communication"
    if not _is_gpu(device):
        return "mpi", f"{size} ranks on the CPU: host arrays over MPI"
    ok = nccl_available() if nccl is None else nccl
    if not ok:
        return "mpi", (f"{size} GPU ranks but cupy cannot load libnccl: device arrays staged "
                       "through host memory over MPI (install the gpu extra for NCCL)")
    gpus = _gpu_count() if gpus is None else gpus
    if local_size > gpus:
        return "mpi", (f"{local_size} ranks share {gpus} GPU(s) on a node and NCCL needs one "
                       "GPU per rank: device arrays staged through host memory over MPI")
    return "nccl", (f"{size} GPU ranks: gradients and activations over NCCL on the GPUs; "
                    "MPI for the control messages")


def _gpu_count() -> int:
    from skiff.kernels.backend import cupy

    cp = cupy()
    return int(cp.cuda.runtime.getDeviceCount()) if cp is not None else 0


def world(engine: str = "auto", device=None) -> Comm:
    """The communicator of every rank of this job.

    ``engine``: ``auto`` (the launcher decides the size: one rank is the one-rank group;
    more ranks are NCCL when ``device`` is a GPU, else MPI; see :func:`choose_engine`),
    ``self``, ``mpi`` or ``nccl`` (GPU arrays; needs a GPU and MPI). With more than one rank
    the MPI world is first checked against the launcher (:func:`check_launch`).
    """
    global _WORLD, _NCCL
    if engine not in ENGINES:
        raise ValueError(f"unknown communicator engine {engine!r}: choose from "
                         f"{', '.join(ENGINES)}")
    if engine == "self":
        return SelfComm()
    if _WORLD is None:
        if launch_env().size <= 1 and not launched_by_mpi():
            _WORLD = SelfComm()
        else:
            mpi = MPIComm()
            check_launch(mpi.size)
            _WORLD = mpi if mpi.size > 1 else SelfComm()
    if engine == "mpi":
        return _WORLD if isinstance(_WORLD, MPIComm) else MPIComm()
    if engine == "auto" and choose_engine(device, _WORLD.size,
                                          local_size=launch_env().local_size)[0] != "nccl":
        return _WORLD
    if _NCCL is None:
        control = _WORLD if isinstance(_WORLD, MPIComm) else MPIComm()
        _NCCL = NCCLComm(control)
    return _NCCL

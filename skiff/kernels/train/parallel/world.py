"""The job's communicator: :func:`world` picks the engine (one rank, MPI or NCCL) from how the
job was launched, once per process.
"""

from __future__ import annotations

from skiff.kernels.backend.launch_env import launched_by_mpi

from .comm import Comm, MPIComm, SelfComm
from .nccl import NCCLComm

__all__ = ["world"]

_WORLD: Comm | None = None


def world(engine: str = "auto") -> Comm:
    """The communicator of every rank of this job.

    ``engine``: ``auto`` (MPI when launched by mpiexec/srun with more than one rank, else the
    one-rank group), ``self``, ``mpi`` or ``nccl`` (GPU arrays; needs a GPU and MPI).
    """
    global _WORLD
    if engine not in ("auto", "self", "mpi", "nccl"):
        raise ValueError(f"unknown communicator engine {engine!r}: choose from auto, self, "
                         "mpi, nccl")
    if engine == "self":
        return SelfComm()
    if engine == "auto" and _WORLD is not None:
        return _WORLD
    if engine == "auto" and not launched_by_mpi():
        _WORLD = SelfComm()
        return _WORLD
    mpi = MPIComm()
    if engine == "nccl":
        return NCCLComm(mpi)
    comm: Comm = mpi if mpi.size > 1 else SelfComm()
    if engine == "auto":
        _WORLD = comm
    return comm

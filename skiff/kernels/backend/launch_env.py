"""Where this process stands in a launch: rank, world size, local rank and ranks per node.

One reader of the variables that launchers set, so that the worker, the communicator, the
device choice and the thread budget agree: MPICH Hydra and other PMI launchers (``PMI_RANK``,
``PMI_SIZE``, ``MPI_LOCALRANKID``, ``MPI_LOCALNRANKS``), PMIx (``PMIX_RANK``,
``PMIX_LOCAL_RANK``, ``PMIX_LOCAL_SIZE``), Open MPI (``OMPI_COMM_WORLD_*``) and Slurm's
``srun`` (``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``, ``SLURM_NTASKS_PER_NODE``).
Outside a launch every reader gives the one-process answer (rank 0 of 1).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["LaunchEnv", "launch_env", "local_rank", "launched_by_mpi", "check_launch",
           "LaunchMismatch", "RANK_VARS"]

# (rank, size) variable pairs, in the order they are believed
RANK_VARS = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
             ("PMIX_RANK", "PMIX_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"))
LOCAL_RANK_VARS = ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK",
                   "SLURM_LOCALID", "LOCAL_RANK")
LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE",
                   "SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE")
# variables that only an MPI process manager sets (srun alone does not make an MPI world)
MPI_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def _int(text: str | None) -> int | None:
    # SLURM_NTASKS_PER_NODE may read "2(x3)": two tasks on each of three nodes
    text = (text or "").split("(")[0].strip()
    return int(text) if text.isdigit() else None


@dataclass(frozen=True)
class LaunchEnv:
    """This process's place in its launch."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    launcher: str = "none"  # the variable family the rank came from: pmi, ompi, pmix, slurm


def launch_env(environ=None) -> LaunchEnv:
    """Read the launch variables of ``environ`` (default ``os.environ``)."""
    env = os.environ if environ is None else environ
    rank, size, launcher = 0, 1, "none"
    for (r, s), name in zip(RANK_VARS, ("pmi", "ompi", "pmix", "slurm")):
        if _int(env.get(r)) is not None:
            rank, size, launcher = _int(env.get(r)), _int(env.get(s)) or 1, name
            break
    local = next((_int(env.get(v)) for v in LOCAL_RANK_VARS if _int(env.get(v)) is not None), 0)
    per_node = next((_int(env.get(v)) for v in LOCAL_SIZE_VARS if _int(env.get(v))), 1)
    return LaunchEnv(rank, size, local, per_node, launcher)


def local_rank() -> int:
    """This process's rank among the ranks of its node (0 outside MPI/Slurm launches)."""
    return launch_env().local_rank


def launched_by_mpi(environ=None) -> bool:
    """True when an MPI process manager started this process."""
    env = os.environ if environ is None else environ
    return any(v in env for v in MPI_VARS)


class LaunchMismatch(RuntimeError):
    """The MPI world is not the world the launcher started (one line for the user)."""


def _mismatch_message(env: LaunchEnv, mpi_size: int) -> str:
    source = {"slurm": "Slurm (SLURM_PROCID/SLURM_NTASKS)", "pmi": "PMI (PMI_RANK/PMI_SIZE)",
              "pmix": "PMIx (PMIX_RANK/PMIX_SIZE)",
              "ompi": "Open MPI (OMPI_COMM_WORLD_*)"}.get(env.launcher, env.launcher)
    hint = ("srun started the ranks without an MPI plugin that this MPI understands: run "
            "`srun --mpi=pmi2` (or another plugin `srun --mpi=list` offers; skiff's Slurm "
            "launcher takes it as mpi=...)" if env.launcher == "slurm" else
            "the launcher and the MPI library do not belong together (an mpiexec from another "
            "MPI than the one mpi4py was built with)")
    return (f"rank {env.rank} of {env.size} by {source}, but MPI sees a world of {mpi_size}: "
            f"{hint}. Stopping rather than letting {env.size} copies each train alone.")


def check_launch(mpi_size: int | None = None, environ=None) -> LaunchEnv:
    """Stop with :class:`LaunchMismatch` unless the MPI world has the launcher's size.

    ``mpi_size``: the communicator's size (default: ask ``MPI.COMM_WORLD``, initialising
    MPI, only when the launcher says more than one rank). Returns the launch environment.
    """
    env = launch_env(environ)
    if env.size <= 1:
        return env
    if mpi_size is None:
        from mpi4py import MPI

        mpi_size = MPI.COMM_WORLD.Get_size()
    if int(mpi_size) != env.size:
        raise LaunchMismatch(_mismatch_message(env, int(mpi_size)))
    return env

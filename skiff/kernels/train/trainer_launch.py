"""The reporter of a :class:`.trainer.Trainer` given none, and where it stands in a launch.

A user's script run as ``mpiexec -n 2 python train.py`` (or started by a notebook with
``MPI.COMM_SELF.Spawn``) calls ``Trainer(model, strategy="auto").train(data)`` on every
rank, as a torch program calls ``DistributedDataParallel`` under ``torchrun``. The Trainer
learns the job's ranks from its reporter; a plain :class:`NullReporter` says one rank, so
each rank used to train the whole model alone on the whole data (the same run twice, and
two processes writing the same checkpoint). :func:`launch_reporter` gives the NullReporter
this rank and the MPI world's size when an MPI process manager started the process, so that
``"auto"`` (or ``"dp"``, ``"zero2"``, a layout) plans over the ranks and each rank trains
on its share of every batch. ``strategy="single"`` keeps one independent run per rank (a
sweep of one process per rank).
"""

from __future__ import annotations

__all__ = ["launch_reporter"]


def launch_reporter(strategy_spec):
    """A NullReporter that knows this rank and the job's size (1 outside an MPI launch)."""
    from skiff.kernels.backend.launch_env import launch_env, launched_by_mpi
    from skiff.kernels.backend.report import NullReporter

    rep = NullReporter()
    if strategy_spec == "single" or not (launched_by_mpi() or launch_env().size > 1):
        return rep
    from .parallel.world import world

    comm = world()  # checks the MPI world against the launcher's size
    if comm.size > 1:
        rep.rank, rep.world_size = int(comm.rank), int(comm.size)
    return rep

"""Distributed training: communicators, process groups, data/tensor/pipeline/expert parallel
strategies, gradient compression and sharded checkpoints.

The communicator and groups import nothing of the training core, so they work on their own;
the parallel layers and strategies are imported from their modules on first use.
"""

from .comm import REDUCE_OPS, Comm, Handle, MPIComm, NCCLComm, SelfComm, world
from .groups import Layout, ProcessGroups, limit_threads

__all__ = ["Comm", "Handle", "Layout", "MPIComm", "NCCLComm", "ProcessGroups", "REDUCE_OPS",
           "SelfComm", "limit_threads", "world"]

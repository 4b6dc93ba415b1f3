"""Distributed training: communicators, process groups, data/tensor/pipeline/expert parallel
strategies, gradient compression and sharded checkpoints.

The communicator and groups import nothing of the training core, so they work on their own;
the parallel layers and strategies are imported from their modules on first use.
"""

from .comm import REDUCE_OPS, Comm, Handle, MPIComm, SelfComm
from .groups import Layout, ProcessGroups, limit_threads
from .nccl import NCCLComm
from .spawned import SpawnedRanksFailed, gather_from_ranks, wait_for_ranks
from .world import world

__all__ = ["Comm", "Handle", "Layout", "MPIComm", "NCCLComm", "ProcessGroups", "REDUCE_OPS",
           "SelfComm", "SpawnedRanksFailed", "gather_from_ranks", "limit_threads",
           "wait_for_ranks", "world"]


def strategy_from_plan(plan, comm: Comm | None = None, **options):
    """The :class:`~skiff.kernels.train.strategy.Strategy` that runs a plan's layout.

    Data parallel (``dp``) and ZeRO-1/2 run any model; ``dp x tp`` and ``dp x pp`` split a
    GPT or an ERNIE-4.5 model (:mod:`.tensor_parallel`, :mod:`.ernie_tensor`,
    :mod:`.pipeline`); ``ep = dp`` runs a :func:`.moe.gpt_moe` model or an ERNIE-4.5 MoE
    model (:mod:`.ernie_experts`). Any other combination is rejected with the list of what
    runs (:func:`skiff.kernels.train.plan.planner.runs_in_skiff` says the same).
    """
    strategy = _strategy_for(plan, comm, **options)
    strategy.plan = plan
    return strategy


def _strategy_for(plan, comm, **options):
    from .data_parallel import DataParallel, ZeRO

    c = plan.choice
    if c.tp == c.pp == c.ep == 1:
        if c.zero:
            return ZeRO(c.zero, comm, **options)
        return DataParallel(comm, **options)
    if c.pp == c.ep == 1 and c.zero == 0:
        from .hybrid import TensorParallel

        return TensorParallel(Layout(dp=c.dp, tp=c.tp), comm, **options)
    if c.tp == c.ep == 1 and c.zero == 0:
        from .pipeline import PipelineParallel

        micro = max(1, getattr(plan.estimate, "n_micro", 1))
        return PipelineParallel(Layout(dp=c.dp, pp=c.pp), comm, micro_batches=micro,
                                **options)
    if c.ep == c.dp and c.tp == c.pp == 1 and c.zero == 0:
        from .moe import ExpertParallel

        return ExpertParallel(comm, **options)
    raise ValueError(
        f"layout {c.label()} is not one skiff runs: it runs dp, zero1/zero2 (any model), "
        "dp x tp (GPT or ERNIE-4.5, zero=0), dp x pp (GPT or ERNIE-4.5, zero=0) and ep = dp "
        "(a gpt_moe or ERNIE-4.5 MoE model); choose one of those, or strategy='auto'")


__all__ += ["strategy_from_plan"]

"""Which strategy a Trainer runs: :func:`resolve_strategy` turns a name (``"auto"``,
``"dp"``, a layout) or a Strategy instance into the strategy object and its plan record.
"""

from __future__ import annotations

from .strategy import SingleDevice, Strategy

__all__ = ["resolve_strategy", "memory_limit"]


def resolve_strategy(spec, model, *, world_size: int = 1, reporter=None, global_batch=None,
                     seq_len=None, weight_bytes: int = 4,
                     grad_bytes: int | None = None,
                     device_memory=None) -> tuple[Strategy, dict]:
    """(strategy, plan record) for ``spec``: a Strategy instance is used as given; a name
    goes through the planner (``skiff.kernels.train.plan.resolve``) when it is installed.
    ``device_memory``: the memory a device may use (bytes, or text like ``"40GB"``, as
    ``%plan --device-memory``); the plan chooses as for devices of that size (default:
    what the device reports, a CPU host's memory shared by its ranks)."""
    if isinstance(spec, Strategy):
        return spec, spec.describe() | {"explicit": True,
                                        "reasons": ["strategy object given by the caller"]}
    if not isinstance(spec, str):
        raise TypeError(f"strategy must be a name or a Strategy, got {spec!r}")
    try:
        from .plan import resolve as plan_resolve
    except ImportError:
        plan_resolve = None
    record: dict
    if device_memory is not None:
        device_memory = memory_limit(device_memory)
    if plan_resolve is not None and (world_size > 1 or spec != "single"
                                     or device_memory is not None):
        extra = {}
        flops = _shared_flops(world_size)
        if flops is not None:
            extra["flops"] = flops
        plan = plan_resolve(spec, model, world_size=world_size, global_batch=global_batch,
                            seq_len=seq_len, weight_bytes=weight_bytes,
                            grad_bytes=grad_bytes, device_memory=device_memory, **extra)
        record = plan.to_json()
        record.pop("table", None)
        kind = plan.strategy
    else:
        kind = "single" if spec in ("auto", "single") else spec
        why = ("one process: the whole model and its optimizer state on this device"
               if spec == "auto" else "explicit strategy kept as given")
        record = {"spec": spec, "strategy": kind, "reasons": [why]}
    if kind == "single":
        if world_size > 1:
            raise ValueError(f"strategy {spec!r} runs on one device, but the job has "
                             f"{world_size} ranks")
        return SingleDevice(), record
    try:
        from .parallel import strategy_from_plan
    except ImportError:
        strategy_from_plan = None
    if strategy_from_plan is not None:
        return strategy_from_plan(plan), record
    # until parallel provides strategy_from_plan: the data-parallel family directly
    if kind in ("dp", "zero1", "zero2"):
        from .parallel.data_parallel import DataParallel, ZeRO

        return (DataParallel() if kind == "dp" else ZeRO(stage=int(kind[-1]))), record
    raise ValueError(f"strategy {kind!r} ({record.get('label', spec)}) needs a distributed "
                     "strategy that skiff.kernels.train.parallel does not provide yet")


def _shared_flops(world_size: int) -> float | None:
    """Rank 0's measured matmul rate, on every rank of a job of ``world_size`` ranks (None
    on one rank or outside such a job). Each rank measured its own: on a loaded host 2
    ranks of one gpt-mini job predicted 0.0644 and 0.0618 s a step, and a choice that
    close could differ between the ranks, whose collectives would then not match."""
    if world_size <= 1:
        return None
    from .parallel.world import world
    from .plan import measure_flops

    comm = world()
    if comm.size != world_size:
        return None
    return float(comm.bcast_object(measure_flops() if comm.rank == 0 else None, root=0))


def memory_limit(value) -> int:
    """Bytes of a device memory limit: an int, or text like ``"40GB"`` / ``"16GiB"``
    (ValueError naming the value and the fix when it is no positive size)."""
    from skiff.kernels.backend.units import byte_size

    try:
        size = byte_size(value) if isinstance(value, (int, str)) else None
    except ValueError:
        size = None
    if not size:  # None, 0, a float, a bool, a typo
        raise ValueError(f"device_memory={value!r} is no memory size: give bytes (an int > 0) "
                         "or text like '40GB' or '16GiB'")
    return size

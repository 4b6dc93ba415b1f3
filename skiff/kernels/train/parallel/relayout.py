"""A checkpoint's optimizer state in the layout of the optimizer that resumes it.

One device and data parallel step one optimizer entry per parameter; ZeRO steps one flat
slice of all parameters joined (:class:`.data_parallel.ZeRO`). A run saved under one and
resumed under the other (``--np 2 --strategy zero2`` resumed with ``--strategy dp``, or on
one process) used to fail with "optimizer state does not fit: groups of sizes [1] vs [6]".
:func:`fit_optimizer_state` converts: per-parameter moments are joined and cut to this
rank's flat slice, a flat vector (this rank's slice, gathered from every rank over ``comm``
when the optimizer wants it whole) is split back into the parameters' shapes. Numbers (a
step count) are kept as they are. :func:`fit_masters` does the same for the float32
masters of mixed precision (a list per parameter under one device and dp, one flat slice
under ZeRO), and :func:`whole_by_name` gives a model-splitting layout (tp, pp) every
parameter's whole moments and master by name, to cut its own pieces from.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_optimizer_state", "saved_params", "per_parameter", "fit_masters",
           "whole_by_name", "newest_steps", "one_process_is_newest", "read_one_process"]


def saved_params(state: dict) -> int:
    """How many parameters a saved optimizer state's groups list."""
    return sum(len(g.get("params", [])) for g in state.get("param_groups", []))


def _hyper(state: dict) -> list:
    return [{k: v for k, v in g.items() if k != "params"} for g in state["param_groups"]]


def fit_optimizer_state(state: dict, *, sizes: list[int], shapes: list[tuple],
                        flat_range: tuple[int, int] | None = None, comm=None) -> dict | None:
    """``state`` (an optimizer ``state_dict``) for an optimizer over ``len(sizes)``
    parameters of these sizes and shapes, or, with ``flat_range=(lo, hi)``, over one flat
    slice ``[lo, hi)`` of them joined (ZeRO). A flat saved state holds this rank's slice
    of the new world (``load_sharded`` cut it so); ``comm`` gathers the slices when the
    optimizer wants every parameter. Returns None when a parameter has no saved state (the
    moments then start afresh)."""
    total = int(sum(sizes))
    saved = state.get("state", {})
    n = saved_params(state)
    if flat_range is not None:  # a ZeRO optimizer: one flat entry, this rank's slice
        if n == 1:
            return state
        if n != len(sizes):
            raise ValueError(f"the checkpoint's optimizer state is for {n} parameters, this "
                             f"model has {len(sizes)}")
        per = [saved.get(i, saved.get(str(i))) for i in range(n)]
        if any(st is None for st in per):
            return None
        lo, hi = flat_range
        first = {}
        for k, v in per[0].items():
            if np.ndim(v) > 0:
                whole = np.concatenate([np.asarray(st[k]).reshape(-1) for st in per])
                first[k] = whole[lo:hi].copy()
            else:
                first[k] = v
        hyper = _hyper(state)[:1]
        return {"state": {0: first}, "param_groups": [{**hyper[0], "params": [0]}]}
    if n == len(sizes) and not (n == 1 and len(sizes) == 1):
        return state
    if n != 1:
        raise ValueError(f"the checkpoint's optimizer state is for {n} parameters, this "
                         f"model has {len(sizes)}")
    flat = saved.get(0, saved.get("0"))
    if flat is None:
        return None
    out_state: dict = {i: {} for i in range(len(sizes))}
    for k, v in flat.items():
        if np.ndim(v) == 0:
            for i in range(len(sizes)):
                out_state[i][k] = v
            continue
        arr = np.asarray(v).reshape(-1)
        if arr.size != total:  # this rank's slice: the others' from every rank
            if comm is None or comm.size == 1:
                raise ValueError(f"a flat optimizer state of {arr.size} values for "
                                 f"{total} parameters")
            arr = np.asarray(comm.allgatherv(np.ascontiguousarray(arr))[0]).reshape(-1)
        off = 0
        for i, (size, shape) in enumerate(zip(sizes, shapes)):
            out_state[i][k] = arr[off:off + size].reshape(shape).copy()
            off += size
    hyper = _hyper(state)
    return {"state": out_state,
            "param_groups": [{**hyper[0], "params": list(range(len(sizes)))}]}


def per_parameter(arrays, *, sizes: list[int], shapes: list[tuple], comm=None) -> list:
    """Per-parameter arrays (``shapes``) from ``arrays``: already one per parameter, or one
    flat vector of them joined, whole or this rank's slice (the others' gathered over
    ``comm``, a collective call)."""
    arrays = [np.asarray(a) for a in arrays]
    if len(arrays) == len(sizes) and all(a.size == n for a, n in zip(arrays, sizes)):
        return [a.reshape(shape) for a, shape in zip(arrays, shapes)]
    total = int(sum(sizes))
    if len(arrays) != 1:
        raise ValueError(f"{len(arrays)} saved arrays for {len(sizes)} parameters")
    flat = arrays[0].reshape(-1)
    if flat.size != total:  # this rank's slice: the others' from every rank
        if comm is None or comm.size == 1:
            raise ValueError(f"a flat array of {flat.size} values for {total} parameters")
        flat = np.asarray(comm.allgatherv(np.ascontiguousarray(flat))[0]).reshape(-1)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    return [flat[a:b].reshape(shape).copy()
            for a, b, shape in zip(offsets[:-1], offsets[1:], shapes)]


def fit_masters(masters, *, sizes: list[int], shapes: list[tuple],
                flat_range: tuple[int, int] | None = None, comm=None) -> list:
    """Saved float32 masters for this layout: one per parameter, or with ``flat_range``
    this rank's flat slice ``[lo, hi)`` of them joined (ZeRO, where the slice *is* the
    master). A ZeRO checkpoint's masters come as this rank's slice of the new world
    (``load_sharded`` cut them so), a dp or one-process one's per parameter."""
    masters = [np.asarray(m) for m in masters]
    if flat_range is not None:
        lo, hi = flat_range
        if len(masters) == 1 and masters[0].size == hi - lo:
            return [masters[0].reshape(-1)]
        whole = per_parameter(masters, sizes=sizes, shapes=shapes, comm=comm)
        return [np.concatenate([m.reshape(-1) for m in whole])[lo:hi].copy()]
    return per_parameter(masters, sizes=sizes, shapes=shapes, comm=comm)


def whole_by_name(optimizer: dict | None, masters, *, names: list[str], shapes: list[tuple],
                  comm=None) -> tuple[dict | None, list | None, dict | None]:
    """``(moments, hyper, masters)`` of a dp, ZeRO or one-process checkpoint (parameters
    ``names`` of single-device ``shapes``, in its order) by parameter name, each array
    whole: ``{name: {key: array or number}}``, the groups' hyper-parameters, and
    ``{name: master}``. A collective call over ``comm`` (the ranks that read the flat
    slices). The moments are None when the checkpoint has none for some parameter."""
    sizes = [int(np.prod(s)) for s in shapes]
    moments = hyper = None
    if isinstance(optimizer, dict) and "param_groups" in optimizer:
        per = fit_optimizer_state(optimizer, sizes=sizes, shapes=shapes, comm=comm)
        if per is not None:
            saved = per["state"]
            states = [saved.get(i, saved.get(str(i))) for i in range(len(names))]
            if all(st is not None for st in states):
                moments = dict(zip(names, states))
                hyper = _hyper(per)
    whole = None
    if masters is not None:
        whole = dict(zip(names, per_parameter(masters, sizes=sizes, shapes=shapes,
                                              comm=comm)))
    return moments, hyper, whole


def newest_steps(directory) -> tuple[int | None, int | None]:
    """(the newest step of a one-process ``step-N.npz``, of a sharded ``step-N/`` folder)
    in ``directory``: which kind of checkpoint a resume should read."""
    from skiff.kernels.train.checkpoint import list_checkpoints

    from .checkpoint import list_sharded

    def step(path) -> int | None:
        digits = "".join(c for c in path.name.split(".")[0] if c.isdigit())
        return int(digits) if digits else None

    npz = [s for s in map(step, list_checkpoints(directory)) if s is not None]
    sharded = [s for s in map(step, list_sharded(directory)) if s is not None]
    return (max(npz) if npz else None), (max(sharded) if sharded else None)


def one_process_is_newest(directory, comm) -> bool:
    """Whether the newest checkpoint in ``directory`` is a one-process ``step-N.npz`` (rank
    0 looks, every rank of ``comm`` learns it): a layout's reader then takes
    :func:`read_one_process`."""
    steps = comm.bcast_object(newest_steps(directory) if comm.rank == 0 else None, root=0)
    return steps[0] is not None and (steps[1] is None or steps[0] > steps[1])


def read_one_process(directory, comm, *, strategy: str, corrupt=None,
                     reporter=None) -> tuple | None:
    """``(path, state)``: the newest ``step-N.npz`` one process wrote (the whole model, its
    moments per parameter), read by every rank of ``comm``, or None. The one reader of dp,
    ZeRO, tp, pp and dp x tp (each cuts its part of it afterwards; round 43 h5: dp's and
    tp's had a copy each). Rank 0 alone reports a damaged file; every rank waits for the
    others' reads, so that none re-saves this step while another still reads it."""
    from skiff.kernels.train.checkpoint import load_latest

    found = load_latest(directory, on_corrupt=corrupt if comm.rank == 0 else None)
    comm.barrier()
    if found is None:
        return None
    if reporter is not None:
        reporter.log(f"checkpoint {found[0].name} was written by one process: read on "
                     f"{comm.size} ranks ({strategy})")
    return found

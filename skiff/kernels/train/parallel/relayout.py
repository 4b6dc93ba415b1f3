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
                        flat_range: tuple[int, int] | None = None, comm=None,
                        groups: list[list[int]] | None = None) -> dict | None:
    """``state`` (an optimizer ``state_dict``) for an optimizer over ``len(sizes)``
    parameters of these sizes and shapes, or, with ``flat_range=(lo, hi)``, over one flat
    slice ``[lo, hi)`` of them joined (ZeRO). A flat saved state holds this rank's slice
    of the new world (``load_sharded`` cut it so); ``comm`` gathers the slices when the
    optimizer wants every parameter. Returns None when a parameter has no saved state (the
    moments then start afresh).

    ``groups`` (round 47 h3): the resuming optimizer's parameter groups as positions in
    ``sizes``' order (the flat vector's), each group's in its own order: a ZeRO optimizer
    stepped group by group (:func:`.zero_groups.flat_groups`), a dp optimizer's groups.
    Every saved group's settings are kept (one group was written before). Without it, a
    flat state that names its groups (``flat_groups``, a grouped ZeRO's) is cut for an
    optimizer of those groups in their order (one process resuming it, built as the ZeRO
    run's was), ``sizes`` then in that order. A per-parameter state is read by the
    positions it names (``param_positions``, dp's) or, without them, as built alike."""
    saved = state.get("state", {})
    n = saved_params(state)
    hyper = _hyper(state)
    if flat_range is not None:  # a ZeRO optimizer: one flat entry, this rank's slice
        if n == 1:
            return state
        if n != len(sizes):
            raise ValueError(f"the checkpoint's optimizer state is for {n} parameters, this "
                             f"model has {len(sizes)}")
        per = [saved.get(i, saved.get(str(i))) for i in range(n)]
        if any(st is None for st in per):
            return None
        by_pos = [None] * n
        for i, pos in enumerate(_saved_positions(state, groups, n)):
            by_pos[pos] = per[i]
        lo, hi = flat_range
        first = {}
        for k, v in by_pos[0].items():
            if np.ndim(v) > 0:
                whole = np.concatenate([np.asarray(st[k]).reshape(-1) for st in by_pos])
                first[k] = whole[lo:hi].copy()
            else:
                first[k] = v
        if groups is not None and len(groups) > 1:  # each group's scalar (round 47 h18)
            first.update(_group_scalars(by_pos, groups))
        if groups is None or len(groups) <= 1 or len(hyper) != len(groups):
            return {"state": {0: first}, "param_groups": [{**hyper[0], "params": [0]}]}
        return {"state": {0: first}, "param_groups": [{**hyper[0], "params": [0]}]
                + [{**h, "params": []} for h in hyper[1:]]}
    members = groups
    if members is None:
        named = state.get("flat_groups")
        if n == 1 and named and sorted(p for g in named for p in g) == list(range(len(sizes))):
            order = [p for g in named for p in g]  # sizes come in this order: the model's
            model_sizes, model_shapes = [0] * len(sizes), [()] * len(sizes)
            for k, pos in enumerate(order):
                model_sizes[pos], model_shapes[pos] = sizes[k], shapes[k]
            sizes, shapes, members = model_sizes, model_shapes, [list(g) for g in named]
        else:
            members = [list(range(len(sizes)))]
    order = [p for g in members for p in g]  # the target's index -> position
    if n == len(sizes) and not (n == 1 and len(sizes) == 1):
        if groups is None:  # an optimizer built as the saved one was (one process's)
            return state
        where = _saved_positions(state, groups, n)
        if where == order:
            return state
        per = {pos: saved.get(i, saved.get(str(i))) for i, pos in enumerate(where)}
        if any(st is None for st in per.values()):
            return None
        return {"state": {k: per[pos] for k, pos in enumerate(order)},
                "param_groups": _groups_of(hyper, members)}
    if n != 1:
        raise ValueError(f"the checkpoint's optimizer state is for {n} parameters, this "
                         f"model has {len(sizes)}")
    flat = saved.get(0, saved.get("0"))
    if flat is None:
        return None
    total = int(sum(sizes))
    by_pos: list[dict] = [{} for _ in sizes]
    named = state.get("flat_groups") or []
    for k, v in flat.items():
        if np.ndim(v) == 0:
            if "@" in str(k):  # group i's own scalar (round 47 h9's zero_groups): below
                continue
            for st in by_pos:
                st[k] = v
            for gi, g in enumerate(named):  # NAdam's mu_product, ASGD's eta of each group
                own = flat.get(f"{k}@{gi}")
                if own is not None:
                    for pos in g:
                        if pos < len(by_pos):
                            by_pos[pos][k] = own
            continue
        arr = np.asarray(v).reshape(-1)
        if arr.size != total:  # this rank's slice: the others' from every rank
            if comm is None or comm.size == 1:
                raise ValueError(f"a flat optimizer state of {arr.size} values for "
                                 f"{total} parameters")
            arr = np.asarray(comm.allgatherv(np.ascontiguousarray(arr))[0]).reshape(-1)
        off = 0
        for i, (size, shape) in enumerate(zip(sizes, shapes)):
            by_pos[i][k] = arr[off:off + size].reshape(shape).copy()
            off += size
    return {"state": {k: by_pos[pos] for k, pos in enumerate(order)},
            "param_groups": _groups_of(hyper, members)}


def _group_scalars(by_pos: list[dict], groups: list[list[int]]) -> dict:
    """Per-parameter states' scalars (NAdam's ``mu_product``, ASGD's ``eta``) as a grouped
    ZeRO slice keeps them: ``key`` group 0's, ``key@i`` group ``i``'s where the groups
    differ (the slice's state was the first parameter's for every group before)."""
    out: dict = {}
    for k, v in by_pos[0].items():
        if np.ndim(v) > 0:
            continue
        own = {gi: by_pos[g[0]][k] for gi, g in enumerate(groups)
               if g and k in by_pos[g[0]]}
        if not own:
            continue
        values = list(own.values())
        out[k] = values[0]
        if any(np.any(np.asarray(w) != np.asarray(values[0])) for w in values[1:]):
            out.update({f"{k}@{gi}": w for gi, w in own.items()})
    return out


def _saved_positions(state: dict, groups: list | None, n: int) -> list[int]:
    """A per-parameter saved state's index -> position in the flat vector's order: the
    positions it names (``param_positions``), else those of the resuming optimizer's
    groups where the saved groups have their sizes (built alike), else in order."""
    named = state.get("param_positions")
    if named is not None and len(named) == n:
        return [int(p) for p in named]
    lens = [len(g.get("params", [])) for g in state.get("param_groups", [])]
    if groups is not None and lens == [len(g) for g in groups]:
        return [p for g in groups for p in g]
    return list(range(n))


def _groups_of(hyper: list, members: list[list[int]]) -> list[dict]:
    """``param_groups`` of a per-parameter state: each target group (``members``, numbered
    in order) with its saved group's settings (the first's where the counts differ)."""
    out, k = [], 0
    for gi, g in enumerate(members):
        h = hyper[gi] if len(hyper) == len(members) else hyper[0]
        out.append({**h, "params": list(range(k, k + len(g)))})
        k += len(g)
    return out


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
        # names: the saved optimizer's order (a per-parameter state's, by its
        # ``optimizer_names``) or the flat vector's (a ZeRO state's, grouped or not)
        flat = saved_params(optimizer) == 1 and len(sizes) > 1
        per = fit_optimizer_state(optimizer, sizes=sizes, shapes=shapes, comm=comm,
                                  groups=[list(range(len(sizes)))] if flat else None)
        if per is not None:
            saved = per["state"]
            states = [saved.get(i, saved.get(str(i))) for i in range(len(names))]
            if all(st is not None for st in states):
                moments = dict(zip(names, states))
                hyper = _hyper(optimizer)  # every saved group's settings
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

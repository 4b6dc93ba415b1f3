"""A whole model's optimizer state (dp, ZeRO, one process) cut for an expert-parallel rank.

A checkpoint written whole holds the moments of every parameter of the single-device
model: per parameter (dp, one process; ``param_names`` gives dp's order) or as ZeRO's flat
slices. Under ep a rank holds the dense parameters and its own experts (``experts.j`` is
the global expert ``first + j``); it takes their moments by their single-device names, so
a run resumed under ep continues as the uninterrupted one (the moments used to start
afresh: 3e-4 off in loss two steps later on a small GPT MoE).
"""

from __future__ import annotations

import numpy as np

from .relayout import whole_by_name

__all__ = ["cut_expert_moments", "cut_expert_masters"]


def _template(name: str) -> tuple[str, str] | None:
    """``(head, rest)`` of ``head.experts.<j>.rest``, else None."""
    head, sep, tail = name.partition(".experts.")
    if not sep:
        return None
    j, _, rest = tail.partition(".")
    return (head, rest) if j.isdigit() else None


def _whole_order(state: dict, whole: dict, names: list[str], first: int):
    """``(mine, order)``: this rank's parameters' single-device names, and the whole
    model's trained parameters in the checkpoint's order (None: they do not match)."""
    from .ernie_experts import global_name

    mine = {n: global_name(n, first) for n in names}
    templates = {t for t in map(_template, names) if t is not None}
    dense = {g for g in mine.values() if _template(g) is None}
    # the whole model's trained parameters: the dense ones and every expert's
    params = [n for n in whole if n in dense or _template(n) in templates]
    order = state.get("param_names") or params
    if set(order) != set(params) or not set(mine.values()) <= set(params):
        return mine, None
    return mine, list(order)


def _moment_order(state: dict, order: list[str]) -> list[str]:
    """The name at each index of the checkpoint's optimizer state: an optimizer instance's
    groups step the parameters in their own order (``optimizer_names``, round 42 h5)."""
    named = state.get("optimizer_names")
    return list(named) if named and set(named) == set(order) else order


def cut_expert_masters(state: dict, whole: dict, names: list[str], first: int,
                       comm) -> list | None:
    """This rank's float32 masters of mixed precision (parameters ``names``, in order) from
    the masters of a whole model's checkpoint (one process, dp: one per parameter; ZeRO:
    flat slices), by name; None when it holds none or they do not match (round 42 h5: a
    one-process bf16 run resumed under ep failed "55 saved arrays for 39 parameters")."""
    prec = state.get("precision")
    masters = prec.get("master") if isinstance(prec, dict) else None
    if masters is None:
        return None
    mine, order = _whole_order(state, whole, names, first)
    saved = prec.get("names")  # one process: the masters' own names
    if saved and set(saved) == set(order or ()) and len(saved) == len(masters):
        order = list(saved)
    if order is None:
        return None
    _, _, by_name = whole_by_name(None, masters, names=order,
                                  shapes=[tuple(np.shape(whole[n])) for n in order],
                                  comm=comm)
    return [np.asarray(by_name[mine[n]], np.float32).copy() for n in names]


def cut_expert_moments(state: dict, whole: dict, names: list[str], first: int,
                       comm) -> dict | None:
    """This rank's optimizer state (parameters ``names``, its local names, in order) from
    ``state["optimizer"]`` of a whole model whose weights are ``whole``; None when the
    checkpoint holds no moments for every parameter. A collective call over ``comm`` (a
    ZeRO checkpoint's flat slices are gathered)."""
    saved = state.get("optimizer")
    if not isinstance(saved, dict) or "param_groups" not in saved:
        return None
    mine, order = _whole_order(state, whole, names, first)
    if order is None:
        return None
    order = _moment_order(state, order)
    moments, hyper, _ = whole_by_name(saved, None, names=list(order),
                                      shapes=[tuple(np.shape(whole[n])) for n in order],
                                      comm=comm)
    if moments is None:
        return None
    return {"state": {i: dict(moments[mine[n]]) for i, n in enumerate(names)},
            "hyper": hyper}

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

__all__ = ["cut_expert_moments"]


def _template(name: str) -> tuple[str, str] | None:
    """``(head, rest)`` of ``head.experts.<j>.rest``, else None."""
    head, sep, tail = name.partition(".experts.")
    if not sep:
        return None
    j, _, rest = tail.partition(".")
    return (head, rest) if j.isdigit() else None


def cut_expert_moments(state: dict, whole: dict, names: list[str], first: int,
                       comm) -> dict | None:
    """This rank's optimizer state (parameters ``names``, its local names, in order) from
    ``state["optimizer"]`` of a whole model whose weights are ``whole``; None when the
    checkpoint holds no moments for every parameter. A collective call over ``comm`` (a
    ZeRO checkpoint's flat slices are gathered)."""
    from .ernie_experts import global_name

    saved = state.get("optimizer")
    if not isinstance(saved, dict) or "param_groups" not in saved:
        return None
    mine = {n: global_name(n, first) for n in names}
    templates = {t for t in map(_template, names) if t is not None}
    dense = {g for g in mine.values() if _template(g) is None}
    # the whole model's trained parameters: the dense ones and every expert's
    params = [n for n in whole if n in dense or _template(n) in templates]
    order = state.get("param_names") or params
    if set(order) != set(params) or not set(mine.values()) <= set(params):
        return None
    moments, hyper, _ = whole_by_name(saved, None, names=list(order),
                                      shapes=[tuple(np.shape(whole[n])) for n in order],
                                      comm=comm)
    if moments is None:
        return None
    return {"state": {i: dict(moments[mine[n]]) for i, n in enumerate(names)},
            "hyper": hyper}

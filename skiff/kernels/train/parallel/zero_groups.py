"""ZeRO's flat slice stepped group by group (round 47 h3).

ZeRO-1/2 give the optimizer one flat slice of all the parameters on each rank. A user's
optimizer of several parameter groups (a head at another lr, a no-decay group, other
betas, momentum or eps per group) was stepped as one group: groups that differed in
``weight_decay`` and ``lr`` alone were followed by scaling each element's step
(:func:`..trainer_optimizer.flat_decay`), other settings refused, and a scheduler that moved
the groups by other ratios (a ``CosineAnnealingLR`` with ``eta_min``, a ``LambdaLR`` of one
lambda per group) followed the first group's ratio.

Here the slice is cut into *segments*: the runs of consecutive elements whose parameters
share a group. The optimizer the Trainer steps (``outer``) has the user's groups, each with
its own settings: the first holds the flat slice itself (its state is the slice's: flat
moments of the slice's length, one ``step``), the others no tensor, so that a scheduler
moves every group's lr as torch's does and a checkpoint keeps every group's settings. Its
``step`` runs the same optimizer class (``inner``) on one stand-in tensor per segment, in
its group, each given views of the slice's values, gradient and moments: each group's
elements step with its group's hyper-parameters and lr, as torch's optimizer steps each
group (SGD with momentum and Nesterov, Adam, AdamW; their updates are element-wise).

Round 47 h9: the other element-wise optimizers step the same way (RMSprop, Adagrad, Adamax,
NAdam, RAdam, Adadelta, Rprop, ASGD). A state made at construction (Adagrad's ``sum`` of each
group's ``initial_accumulator_value``) is joined from each group's segments; a scalar state
that depends on the group's settings (NAdam's ``mu_product`` of its ``betas[0]`` and
``momentum_decay``, ASGD's ``eta`` and ``mu`` of its lr, ``lambd``, ``alpha``, ``t0``) is
kept per group: under its key where the groups agree, else group ``i``'s under ``key@i``
too. Optimizers whose update is not element-wise (LBFGS, Muon, Adafactor's factored
moments, SparseAdam) keep the refusal.
"""

from __future__ import annotations

import numpy as np

__all__ = ["grouped_slice", "flat_groups", "construct", "every_groups_scalars", "STEPPED"]

STEPPED = ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam",
           "Adadelta", "Rprop", "ASGD")


def flat_groups(spec, params: list) -> list[list[int]]:
    """Per group of ``spec``: the positions in ``params`` (the strategy's parameters, the
    flat vector's order) of its tensors, in the group's order (the order its
    ``state_dict`` numbers them)."""
    pos = {id(q): k for k, q in enumerate(params)}
    return [[pos[id(p)] for p in g["params"] if id(p) in pos] for g in spec.param_groups]


def _stepped(spec) -> bool:
    """skiff's own element-wise optimizers (the class itself: a subclass may step otherwise)."""
    from ..core import optim, optim_adadelta_rprop, optim_adam_family, optim_asgd, optim_more

    mods = (optim, optim_more, optim_adam_family, optim_adadelta_rprop, optim_asgd)
    return any(type(spec) is getattr(m, n, None) for m in mods for n in STEPPED)


def grouped_slice(spec, settings: list[dict], strategy, name: str):
    """An optimizer of ``spec``'s class and groups (``settings``: each group's settings)
    stepping ``strategy``'s flat slice group by group, or None where ``spec`` is not one
    of skiff's element-wise optimizers (:data:`STEPPED`) and its groups' settings are all
    equal (one group serves).
    Groups of other settings of another optimizer are refused, naming what works."""
    if not _stepped(spec):
        if all(s == settings[0] for s in settings[1:]):
            return None
        differ = sorted({k for s in settings[1:] for k in {**s, **settings[0]}
                         if s.get(k) != settings[0].get(k)})
        raise ValueError(
            f"optimizer=... is a {type(spec).__name__} of {len(settings)} parameter groups "
            f"of other settings ({', '.join(differ)}); strategy {name!r} steps one flat "
            "slice of all the parameters on each rank, group by group for skiff's "
            f"element-wise optimizers only ({', '.join(STEPPED)}); a "
            f"{type(spec).__name__}'s update is not element-wise: use one of them, give one "
            "group's settings, or strategy='dp' (it steps the groups as they are)")
    from ..core.tensor import Tensor

    shard, lo = strategy.shard, strategy.lo
    group_of = {id(p): gi for gi, g in enumerate(spec.param_groups) for p in g["params"]}
    segments: list[list[list[int]]] = [[] for _ in settings]
    for q, a, i, j in strategy._pieces(strategy.lo, strategy.hi):
        gi = group_of.get(id(q))
        if gi is None:  # not in the user's optimizer: not stepped, as torch leaves it
            continue
        s, e = a - lo, a - lo + j - i
        if segments[gi] and segments[gi][-1][1] == s:
            segments[gi][-1][1] = e
        else:
            segments[gi].append([s, e])
    outer = construct(spec, [{**settings[0], "params": [shard]}]
                      + [{**st, "params": []} for st in settings[1:]])
    dtype = shard._data.dtype
    stand_ins = [[Tensor(np.zeros(e - s, dtype=dtype), requires_grad=True,
                         dtype=dtype) for s, e in segs] for segs in segments]
    inner = None
    if any(stand_ins):
        inner = construct(spec, [{**st, "params": ps} for st, ps in zip(settings, stand_ins)])
    pairs = [list(zip(ps, segs)) for ps, segs in zip(stand_ins, segments)]
    n_all = shard._data.shape[0]
    if inner is not None and inner.state and any(inner.state.values()):
        # a state made at construction (Adagrad's sum of each group's initial value): the
        # slice's joined from the groups' segments, not the first group's for all
        outer.state[shard] = _joined(inner, pairs, {}, n_all, shard.xp)
        inner.state.clear()

    def step(closure=None):
        loss = outer._closure(closure)
        grad = shard._grad
        if grad is None or inner is None:
            return loss
        data, n = shard._data, shard._data.shape[0]
        flat = outer.state.get(shard)
        flat = {} if flat is None else flat
        for gi, (group, own, members) in enumerate(zip(outer.param_groups,
                                                       inner.param_groups, pairs)):
            for k, v in group.items():  # the lr a scheduler set, the settings loaded
                if k != "params":
                    own[k] = v
            for p, (s, e) in members:
                p._data, p._grad = data[s:e], grad[s:e]
                if flat:
                    inner.state[p] = {k: (v[s:e] if _sized(v, n) else
                                          flat.get(f"{k}@{gi}", v))
                                      for k, v in flat.items() if "@" not in str(k)}
                else:
                    inner.state.pop(p, None)
        type(inner).step(inner)
        # the slice's state, updated in place (zero_unreached holds it)
        new = _joined(inner, pairs, flat, n, shard.xp)
        for members in pairs:
            for p, (s, e) in members:
                data[s:e] = p._data  # a view of it already: the same values
                p._grad = None
        inner.state.clear()
        if new:
            outer.state[shard] = new
        return loss

    outer.step = step
    outer._flat_groups = flat_groups(spec, strategy.params)
    outer._segments = segments
    return outer


def construct(spec, groups: list[dict]):
    """``type(spec)(groups)`` given ``spec``'s constructor settings too: torch's Adagrad fills
    every group's ``sum`` with the constructor's ``initial_accumulator_value``, not the
    group's, so a rebuilt one must be given it."""
    import inspect

    cls = type(spec)
    try:
        names = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return cls(groups)
    kw = {k: v for k, v in getattr(spec, "defaults", {}).items()
          if k in names and k not in ("self", "params", "lr")}
    try:
        return cls(groups, **kw)
    except (TypeError, ValueError):
        return cls(groups)


def _joined(inner, pairs, new: dict, n: int, xp) -> dict:
    """The slice's state from each segment's (``inner.state``): a moment's segments written
    into one array of the slice's length, a scalar kept per group (``key`` where the groups
    agree, else also ``key@i`` for group ``i``)."""
    scalars: dict = {}
    for gi, members in enumerate(pairs):
        for p, (s, e) in members:
            for k, v in (inner.state.get(p) or {}).items():
                if _sized(v, e - s):
                    if k not in new:
                        new[k] = xp.zeros(n, dtype=v.dtype)
                    new[k][s:e] = v
                else:
                    scalars.setdefault(k, {})[gi] = v
    for k in [k for k in new if "@" in str(k)]:
        del new[k]
    for k, by_group in scalars.items():
        values = list(by_group.values())
        new[k] = values[0]
        if any(v != values[0] for v in values[1:]):
            for gi, v in by_group.items():
                new[f"{k}@{gi}"] = v
    return new


def _sized(v, n: int) -> bool:
    """An array of the slice's (or a segment's) length: a moment, a momentum buffer."""
    shape = getattr(v, "shape", None)
    return shape is not None and len(shape) == 1 and shape[0] == n


def every_groups_scalars(optimizer, comm) -> dict:
    """Each group's scalar state (NAdam's ``mu_product``, ASGD's ``eta``/``mu``) as the ranks
    that hold the group's elements have it (round 47 h18): ``key@i`` for group ``i`` where
    the groups differ, ``key`` group 0's (the first held). A rank keeps only the groups of
    its slice, and a checkpoint's scalars are rank 0's, so on 2 or more ranks a group with
    no element in rank 0's slice resumed with group 0's scalar. A collective call over
    ``comm`` (every rank saves): {} for an optimizer not stepped group by group."""
    groups = getattr(optimizer, "_flat_groups", None)
    segments = getattr(optimizer, "_segments", None)
    if groups is None or segments is None or len(groups) < 2:
        return {}
    shard = optimizer.param_groups[0]["params"][0]
    flat = optimizer.state.get(shard) or {}
    keys = [k for k, v in flat.items() if "@" not in str(k) and _scalar(v)]
    mine = {gi: {k: flat.get(f"{k}@{gi}", flat[k]) for k in keys}
            for gi, segs in enumerate(segments) if segs and keys}
    held: dict = {}
    for theirs in comm.allgather_object(mine):
        for gi, values in theirs.items():
            held.setdefault(int(gi), values)  # a group across ranks steps alike on each
    out: dict = {}
    for k in {k for values in held.values() for k in values}:
        by_group = {gi: held[gi][k] for gi in sorted(held) if k in held[gi]}
        values = list(by_group.values())
        out[k] = values[0]
        if any(_differ(v, values[0]) for v in values[1:]):
            out.update({f"{k}@{gi}": v for gi, v in by_group.items()})
    return out


def _scalar(v) -> bool:
    return getattr(v, "shape", ()) == () and not isinstance(v, (dict, list, str))


def _differ(a, b) -> bool:
    try:
        return bool(a != b)
    except (TypeError, ValueError):
        return True

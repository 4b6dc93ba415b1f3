"""An optimizer instance given as ``optimizer=`` (torch's and Lightning's habit: ``opt =
AdamW(model.parameters(), lr=...)``) where the Trainer steps other tensors than the model's
parameters: the float32 masters of mixed precision, or ZeRO's flat slice of them on each
rank (round 41).

Returned as it was, the instance went on stepping the model's parameters while the
strategy wrote its masters (or its slice, never stepped) back over them after each step:
the run trained nothing, without a word (a ``bf16-mixed`` run's loss, and a ``zero1`` or
``zero2`` run's on 2 ranks, came back to its first value at each epoch). Now the same class
is built on the tensors stepped, with each parameter group's settings (``lr``, ``betas``,
``weight_decay``, a scheduler's ``initial_lr``, ...): group by group where each stepped
tensor stands for one parameter (mixed precision's masters); on ZeRO's flat slice, the
user's groups each stepping its segments of the slice with its own settings and lr
(:mod:`.parallel.zero_groups`, round 47 h3: groups of other weight decays and lrs were
stepped as one group before, rounds 44 h11 and 45 h5, others refused). A
scheduler instance made on the given optimizer is moved onto the one built
(:func:`rebind_scheduler`), as a factory's scheduler is made on it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["optimizer_on", "rebind_scheduler", "group_names", "bias_norm_groups",
           "zero_slice", "flat_decay"]


def group_names(spec, model) -> list[list[str]]:
    """The model's names of each parameter group's tensors, taken before a strategy splits
    the model (tp's slices are new tensors under the same names: round 41 h9)."""
    name_of = {id(p): n for n, p in model.named_parameters()}
    return [[name_of[id(p)] for p in g["params"] if id(p) in name_of]
            for g in spec.param_groups]


def optimizer_on(spec, params: list, source: list | None, strategy: str, *,
                 names: list | None = None, spec_names: list | None = None, flat=None):
    """``spec`` itself when it steps ``params``; else an optimizer of its class on
    ``params``. ``source``: the model's parameters that ``params`` stand for, position by
    position (mixed precision's masters), or None (a flat slice: ZeRO). ``names``: the
    model's names of ``params`` position by position, and ``spec_names`` those of
    ``spec``'s groups (:func:`group_names`): a split model's slices (tp) find their group
    by name, as its masters do in mixed precision. ``flat``: ZeRO's strategy when
    ``params`` is its flat slice (several groups: :func:`.parallel.zero_groups.grouped_slice`)."""
    own = {id(p) for g in spec.param_groups for p in g["params"]}
    if all(id(p) in own for p in params):  # its own tensors (the trainable ones, say)
        return spec
    settings = [{k: v for k, v in g.items() if k != "params"} for g in spec.param_groups]
    stepped_names = positions = None
    if names is not None and spec_names is not None and len(names) == len(params):
        group_of = {n: i for i, group in enumerate(spec_names) for n in group}
        members = [[(p, n) for p, n in zip(params, names) if group_of.get(n) == i]
                   for i in range(len(settings))]
        groups = [{**st, "params": [p for p, _ in m]} for st, m in zip(settings, members) if m]
        stepped_names = [n for m in members for _, n in m]  # a split model's checkpoint's
    elif source is not None and len(source) == len(params):
        where = {id(s): i for i, s in enumerate(source)}
        groups = [{**st, "params": [params[where[id(p)]] for p in g["params"]
                                    if id(p) in where]}
                  for g, st in zip(spec.param_groups, settings)]
        groups = [g for g in groups if g["params"]]
        positions = [where[id(p)] for g in spec.param_groups for p in g["params"]
                     if id(p) in where]  # each master's parameter (a dp checkpoint's order)
    else:
        if flat is not None and len(settings) > 1 and getattr(flat, "shard", None) is not None:
            # ZeRO: the slice stepped group by group, each with its settings and lr (round 47
            # h3: groups of other betas, momentum, eps were refused; a scheduler moving the
            # groups apart followed the first group's ratio)
            from .parallel.zero_groups import grouped_slice

            made = grouped_slice(spec, settings, flat, strategy)
            if made is not None:
                made._rebuilt_from = spec
                return made
        if any(s != settings[0] for s in settings[1:]):
            differ = sorted({k for s in settings[1:] for k in {**s, **settings[0]}
                             if s.get(k) != settings[0].get(k)})
            raise ValueError(
                f"optimizer=... has {len(settings)} parameter groups of other settings "
                f"({', '.join(differ)}); strategy {strategy!r} steps other tensors than the "
                "model's parameters, one group: give one group's settings, or "
                "strategy='dp' (it steps the groups as they are)")
        groups = [{**settings[0], "params": list(params)}]
    if not groups:
        raise ValueError(f"optimizer=... steps none of the parameters the Trainer trains "
                         f"under {strategy!r}: build it on model.parameters()")
    try:
        made = type(spec)(groups)
    except TypeError as exc:
        raise TypeError(f"optimizer=... is a {type(spec).__name__}, which the Trainer "
                        f"rebuilds on the tensors {strategy!r} steps (the float32 masters or a "
                        f"flat slice) as {type(spec).__name__}(param_groups), and that "
                        f"failed ({exc}): pass a factory, optimizer=lambda params: "
                        f"{type(spec).__name__}(params, ...)") from None
    made._rebuilt_from = spec
    if positions is not None:
        made._positions = positions
    if stepped_names is not None:  # the name at each optimizer index (parallel.sliced_state)
        made._stepped_names = stepped_names
    return made


def rebind_scheduler(schedule, given, built) -> None:
    """A scheduler instance made on the optimizer given (``given``) drives ``built``, the
    one the Trainer steps in its place (its groups carry the same ``lr`` and
    ``initial_lr``)."""
    if given is not None and built is not given and getattr(schedule, "optimizer", None) \
            is given and getattr(built, "_rebuilt_from", None) is given:
        schedule.optimizer = built


def bias_norm_groups(params: list, strategy=None) -> list[dict]:
    """``Trainer(decay_bias_norm=False)``'s two AdamW groups (round 44 h5): the parameters of
    two or more axes (weight matrices, convolution kernels, embeddings) decay; those of one
    axis or none (biases, LayerNorm/BatchNorm/RMSNorm scales and shifts) take weight decay 0,
    as transformers' Trainer and nanoGPT leave them out. ZeRO steps one flat slice of all
    the parameters, one group: :func:`flat_decay` there (round 44 h11)."""
    decay = [p for p in params if len(p.shape) >= 2]
    rest = [p for p in params if len(p.shape) < 2]
    groups = [{"params": decay}] if decay else []
    return groups + ([{"params": rest, "weight_decay": 0.0}] if rest else [])


def zero_slice(params: list, strategy):
    """ZeRO's flat slice when ``params`` is it (the one parameter its optimizer steps), else
    None."""
    shard = getattr(strategy, "shard", None)
    return shard if shard is not None and len(params) == 1 and params[0] is shard else None


def flat_decay(optimizer, strategy, decay_of, *, decoupled: bool, lr_of=None):
    """Weight decays and lrs by parameter on ZeRO's flat slice, one group (round 44 h11;
    refused before): ``decay_bias_norm=False`` (``decay_of(q)``: the decay for parameters of
    two or more axes, 0 for biases and norm scales and shifts) and a user's optimizer of
    groups that differ in ``weight_decay`` (``decay_of(q)``: q's group's) or in ``lr``
    (``lr_of(q)``: q's group's lr over the slice's group's; round 45 h5). ``optimizer`` was
    built with weight decay 0; each step first decays each element of the slice by its
    parameter's decay, as the groups of one process do: ``x *= 1 - lr * decay`` before the
    step where the decay is decoupled (AdamW's, torch's order: before its update),
    ``g += decay * x`` for SGD's and Adam's L2. With ``lr_of``, each element's step is
    scaled by its ratio after the step: SGD's (momentum, nesterov), Adam's and AdamW's
    updates are their lr times a direction that does not depend on the lr, so the
    element moves as its group's lr moves it (a schedule scales every group's lr alike:
    the built-in ones, LambdaLR, OneCycleLR ...; a scheduler that moves the groups apart,
    a CosineAnnealingLR with eta_min, follows the first group's)."""
    shard = strategy.shard
    xp = shard.xp
    decays = np.zeros(shard._data.shape[0], dtype=np.float64)
    ratios = None if lr_of is None else np.ones(shard._data.shape[0], dtype=np.float64)
    for q, a, i, j in strategy._pieces(strategy.lo, strategy.hi):
        decays[a - strategy.lo:a - strategy.lo + j - i] = float(decay_of(q))
        if ratios is not None:
            ratios[a - strategy.lo:a - strategy.lo + j - i] = float(lr_of(q))
    decays = xp.asarray(decays.astype(shard._data.dtype))
    if ratios is not None:
        ratios = xp.asarray(ratios.astype(shard._data.dtype))
    inner = optimizer.step

    def step(closure=None):
        if shard._grad is None:
            return inner(closure)
        if decoupled:
            lr = float(optimizer.param_groups[0]["lr"])
            shard._data *= 1 - lr * (decays if ratios is None else ratios * decays)
        else:
            shard._grad = shard._grad + decays * shard._data
        if ratios is None:
            return inner(closure)
        before = shard._data.copy()
        out = inner(closure)
        # x + (r - 1)(x - before): the first group's elements (r = 1) exactly as stepped
        shard._data[...] = shard._data + (ratios - 1) * (shard._data - before)
        return out

    optimizer.step = step
    return optimizer

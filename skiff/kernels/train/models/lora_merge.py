"""peft's ``merge_adapter()`` / ``unmerge_adapter()`` (round 40, h14): the adapters folded
into the base weights in place and taken out again, the adapters kept.

``merge_adapter(adapter_names=None)`` adds ``s B A`` of each named adapter (the active ones
when None) to the weight of every layer it adapts (an expert's gate and up projections
too); a layer that holds a merged adapter then computes its base layer alone, as peft's
merged layer does (``base_layer(x)``: another active adapter on that layer is not added,
one on a layer that holds none still is). The record of what was merged (adapter, layer,
the adapter's layer object, whose ``lora_A`` / ``lora_B`` give the update) stays on the
model; ``unmerge_adapter()`` subtracts each update again, the last merged first, as peft.
Merging a merged adapter again, or unmerging with nothing merged, warns as peft and does
nothing. A merged layer is flagged ``disabled`` (the graph's and the fast inference path's
"base layer alone"), and holds ``merged_adapters`` (peft's name; ``merged``: any).

Round 41 (h6): a DoRA adapter merges as peft's ``DoraLinearVariant``: the norm
``||W + s B A||`` per row of the weight without the merged adapters (kept in the record),
``W <- m / norm * (W + s B A)``, unmerged as ``W / (m / norm) - s B A``; the trained
embedding rows (``trainable_token_indices``) are written into the table (and the tied head,
the same table), the original rows kept and written back at the unmerge, as peft's
``TrainableTokensLayer.merge`` / ``unmerge``.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["merge_in_place", "unmerge_in_place", "merged_names", "is_merged",
           "reflag_merged", "forget_merged"]


def _record(model) -> list:
    return model.__dict__.setdefault("_lora_merged", [])


def merged_names(model) -> list[str]:
    """The merged adapters' names, in the order they were merged."""
    out = []
    for name, *_ in model.__dict__.get("_lora_merged", ()):
        if name not in out:
            out.append(name)
    return out


def is_merged(model) -> bool:
    return bool(model.__dict__.get("_lora_merged"))


def forget_merged(model) -> None:
    """The weights keep what was merged (peft's ``unload()`` / ``merge_and_unload()``)."""
    model.__dict__.pop("_lora_merged", None)


def _layers_of(model, name: str) -> dict:
    """``{layer name: adapter layer}`` of adapter ``name`` (active, in a list, or parked)."""
    from .lora_named import _adapter_layers, _registry

    reg = _registry(model)
    if name == reg["active"]:
        placed = set(reg.get("placed", ()))
        return {n: m for n, m in _adapter_layers(model) if n not in placed}
    return dict(reg["parked"][name][1])


def _weights(model, lname: str):
    """The model's Parameters a layer's update goes into: ``[(weight, row slice)]``."""
    modules = dict(model.named_modules())
    owner, _, attr = lname.rpartition(".")
    parent = modules[owner] if owner else model
    if attr == "gate_up_lora":
        return [(parent.gate_proj.weight, 0), (parent.up_proj.weight, 1)]
    return [(getattr(parent, attr).weight, None)]


def _f32(x) -> np.ndarray:
    return np.asarray(x.numpy(), dtype=np.float32)


def _update(layer) -> np.ndarray:
    """``s B A`` of one adapter layer, float32 on the host."""
    return (_f32(layer.lora_B.weight) @ _f32(layer.lora_A.weight)) * layer.scaling


def _pieces(model, lname: str, layer):
    """``[(weight, its update)]`` of one adapter layer."""
    d = _update(layer)
    out = []
    for w, part in _weights(model, lname):
        half = d.shape[0] // 2
        out.append((w, d if part is None else d[:half] if part == 0 else d[half:]))
    return out


def _is_dora(layer) -> bool:
    return getattr(layer, "lora_magnitude_vector", None) is not None


def _unmerged(model, lname: str, w) -> np.ndarray:
    """Weight ``w`` of layer ``lname`` with the adapters merged into it taken out, the last
    first (peft's ``_unmerged_base_weight``: what a DoRA norm is taken of)."""
    cur = _f32(w)
    for _, ln, layer, norm in reversed(_record(model)):
        if ln == lname:
            cur = _take_out(cur, layer, norm)
    return cur


def _take_out(cur: np.ndarray, layer, norm) -> np.ndarray:
    d = _update(layer)
    if norm is None:
        return cur - d
    return cur / (_f32(layer.lora_magnitude_vector) / norm)[:, None] - d


def _dora_merged(model, lname: str, layer):
    """peft's ``DoraLinearVariant.merge``: ``(weight, m / norm * (W + s B A), norm)``, the
    norm ``||W + s B A||`` per row of the weight without the adapters merged so far."""
    (w, _), = _weights(model, lname)
    d = _update(layer)
    base = _unmerged(model, lname, w)
    norm = np.sqrt(((base + d) ** 2).sum(axis=1))
    return w, (_f32(layer.lora_magnitude_vector) / norm)[:, None] * (_f32(w) + d), norm


def _put(w, value: np.ndarray) -> None:
    """``value`` written into weight ``w``'s storage (in place: the fast path's fused
    matrices hold views of it)."""
    w._data[...] = w.xp.asarray(value).astype(w.dtype)


def _merge_layer(model, name: str, lname: str, layer) -> None:
    norm = None
    if _is_dora(layer):
        w, value, norm = _dora_merged(model, lname, layer)
        _put(w, value)
    else:
        for w, piece in _pieces(model, lname, layer):
            w._data += w.xp.asarray(piece).astype(w.dtype)
    _record(model).append((name, lname, layer, norm))


def _unmerge_layer(model, lname: str, layer, norm) -> None:
    if norm is not None:
        (w, _), = _weights(model, lname)
        _put(w, _take_out(_f32(w), layer, norm))
        return
    for w, piece in _pieces(model, lname, layer):
        w._data -= w.xp.asarray(piece).astype(w.dtype)


# ---- trainable tokens (peft's TrainableTokensLayer.merge / unmerge) ----
TOKENS = "model.embed_tokens"  # the record's layer name of the trained embedding rows


def _merge_tokens(model, name: str, adapter) -> None:
    """The trained rows written into the embedding table (a tied head reads the same
    table); the rows they replace kept for the unmerge."""
    w = model.model.embed_tokens.weight
    idx = w.xp.asarray(adapter.token_indices)
    original = w._data[idx].copy()
    w._data[idx] = w.xp.asarray(adapter.trainable_tokens_delta._data).astype(w.dtype)
    _record(model).append((name, TOKENS, adapter, original))


def _unmerge_tokens(model, adapter, original) -> None:
    w = model.model.embed_tokens.weight
    w._data[w.xp.asarray(adapter.token_indices)] = original


def _token_layers(model) -> list:
    from .lora_tokens import TrainableTokensEmbedding, TrainableTokensHead

    return [m for m in (model.model.embed_tokens, model.lm_head)
            if isinstance(m, (TrainableTokensEmbedding, TrainableTokensHead))]


def _touched(model, todo) -> list:
    """The Parameters merging ``todo`` writes into (``safe_merge`` keeps a copy)."""
    from .lora_tokens import token_adapter

    out = {}
    for name in todo:
        for lname in _layers_of(model, name):
            for w, _ in _weights(model, lname):
                out[id(w)] = w
    if token_adapter(model) is not None:
        w = model.model.embed_tokens.weight
        out[id(w)] = w
    return list(out.values())


def _in_place(model) -> dict:
    from .lora_named import _adapter_layers

    return dict(_adapter_layers(model))


def reflag_merged(model) -> None:
    """Each adapter layer in the model: ``disabled`` (the base layer alone) where its
    weight holds a merged adapter, ``merged_adapters`` naming them."""
    held: dict = {}
    for name, lname, *_ in model.__dict__.get("_lora_merged", ()):
        held.setdefault(lname, []).append(name)
    layers = list(_in_place(model).items()) + [(TOKENS, m) for m in _token_layers(model)]
    for lname, m in layers:
        names = held.get(lname, [])
        m.merged_adapters = names
        if names:
            m.disabled = True
        elif getattr(m, "_merged_off", False):
            m.disabled = False
        m._merged_off = bool(names)


def _tokens_of(model, name: str):
    """The trainable-token adapter merged with adapter ``name`` (the active one: a model
    with trained rows holds that adapter only), or None."""
    from .lora_named import _registry
    from .lora_tokens import token_adapter

    adapter = token_adapter(model)
    return adapter if adapter is not None and name == _registry(model)["active"] else None


def merge_in_place(model, names, safe_merge: bool = False) -> None:
    """peft's ``merge_adapter(adapter_names)``: each named adapter's update added to the
    weights of the layers it adapts (a DoRA one's rows rescaled, trained token rows written
    into the table); a name already merged is left (peft's warning). ``safe_merge``: a
    NaN / inf in a merged weight is peft's error, and the weights are put back."""
    done = merged_names(model)
    todo = [n for n in names if n not in done]
    if done:
        if todo:
            warnings.warn(f"Already following adapters were merged {','.join(done)}. You "
                          f"are now additionally merging {','.join(todo)}.", stacklevel=3)
        else:
            warnings.warn("All adapters are already merged, nothing to do.", stacklevel=3)
    kept = [(w, w._data.copy()) for w in _touched(model, todo)] if safe_merge else []
    record = _record(model)
    size = len(record)
    for name in todo:
        for lname, layer in _layers_of(model, name).items():
            _merge_layer(model, name, lname, layer)
        adapter = _tokens_of(model, name)
        if adapter is not None:
            _merge_tokens(model, name, adapter)
        if safe_merge and not all(np.isfinite(_f32(w)).all() for w, _ in kept):
            for w, data in kept:
                w._data[...] = data
            del record[size:]
            raise ValueError(f"NaNs detected in the merged weights. The adapter {name} seems "
                             f"to be broken")
    reflag_merged(model)


def unmerge_in_place(model, warn: bool = True) -> None:
    """peft's ``unmerge_adapter()``: every merged update taken out, the last first."""
    record = model.__dict__.get("_lora_merged")
    if not record:
        if warn:
            warnings.warn("Already unmerged. Nothing to do.", stacklevel=3)
        return
    for _, lname, layer, extra in reversed(record):
        if lname == TOKENS:
            _unmerge_tokens(model, layer, extra)
        else:
            _unmerge_layer(model, lname, layer, extra)
    forget_merged(model)
    reflag_merged(model)

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

Refused with one line: DoRA adapters (their merge rescales each row; unmerging needs the
norms) and adapters that train embedding rows (``trainable_token_indices``).
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
    for name, _, _ in model.__dict__.get("_lora_merged", ()):
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


def _pieces(model, lname: str, layer):
    """``[(weight, its update)]`` of one adapter layer."""
    d = (layer.lora_B.weight.numpy().astype(np.float32)
         @ layer.lora_A.weight.numpy().astype(np.float32)) * layer.scaling
    out = []
    for w, part in _weights(model, lname):
        half = d.shape[0] // 2
        out.append((w, d if part is None else d[:half] if part == 0 else d[half:]))
    return out


def _apply(model, lname: str, layer, sign: float) -> None:
    for w, piece in _pieces(model, lname, layer):
        w._data += w.xp.asarray(sign * piece).astype(w.dtype)


def _check_finite(model, todo) -> None:
    """peft's ``safe_merge``: each merged weight computed aside first; a NaN / inf is its
    error, nothing merged."""
    for name in todo:
        for lname, layer in _layers_of(model, name).items():
            for w, piece in _pieces(model, lname, layer):
                if not np.isfinite(w.numpy().astype(np.float32) + piece).all():
                    raise ValueError(f"NaNs detected in the merged weights. The adapter "
                                     f"{name} seems to be broken")


def _in_place(model) -> dict:
    from .lora_named import _adapter_layers

    return dict(_adapter_layers(model))


def reflag_merged(model) -> None:
    """Each adapter layer in the model: ``disabled`` (the base layer alone) where its
    weight holds a merged adapter, ``merged_adapters`` naming them."""
    held: dict = {}
    for name, lname, _ in model.__dict__.get("_lora_merged", ()):
        held.setdefault(lname, []).append(name)
    for lname, m in _in_place(model).items():
        names = held.get(lname, [])
        m.merged_adapters = names
        if names:
            m.disabled = True
        elif getattr(m, "_merged_off", False):
            m.disabled = False
        m._merged_off = bool(names)


def _refuse(model, names) -> None:
    from .lora_tokens import token_adapter

    if token_adapter(model) is not None:
        raise ValueError("merge_adapter: the model trains embedding rows "
                         "(trainable_token_indices), which skiff does not merge in place; "
                         "use merge_and_unload()")
    for name in names:
        for m in _layers_of(model, name).values():
            if getattr(m, "lora_magnitude_vector", None) is not None:
                raise ValueError(f"merge_adapter: adapter {name!r} is DoRA (use_dora), which "
                                 "skiff does not merge in place; use merge_and_unload()")


def merge_in_place(model, names, safe_merge: bool = False) -> None:
    """peft's ``merge_adapter(adapter_names)``: each named adapter's update added to the
    weights of the layers it adapts; a name already merged is left (peft's warning)."""
    done = merged_names(model)
    todo = [n for n in names if n not in done]
    if done:
        if todo:
            warnings.warn(f"Already following adapters were merged {','.join(done)}. You "
                          f"are now additionally merging {','.join(todo)}.", stacklevel=3)
        else:
            warnings.warn("All adapters are already merged, nothing to do.", stacklevel=3)
    _refuse(model, todo)
    if safe_merge:
        _check_finite(model, todo)
    record = _record(model)
    for name in todo:
        for lname, layer in _layers_of(model, name).items():
            _apply(model, lname, layer, 1.0)
            record.append((name, lname, layer))
    reflag_merged(model)


def unmerge_in_place(model, warn: bool = True) -> None:
    """peft's ``unmerge_adapter()``: every merged update subtracted, the last first."""
    record = model.__dict__.get("_lora_merged")
    if not record:
        if warn:
            warnings.warn("Already unmerged. Nothing to do.", stacklevel=3)
        return
    for _, lname, layer in reversed(record):
        _apply(model, lname, layer, -1.0)
    forget_merged(model)
    reflag_merged(model)

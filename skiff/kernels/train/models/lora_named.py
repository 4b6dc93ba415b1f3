"""Several named LoRA adapters on one model, one active at a time, as peft's ``PeftModel``
(round 37): ``model.load_adapter(DIR, adapter_name="dpo")`` loads another adapter beside
the one the model has (not made active, as peft), ``model.set_adapter("dpo")`` makes it the
active one, ``model.delete_adapter(name)`` drops one (the first left by name becomes active, as
peft), ``model.active_adapter`` / ``active_adapters()`` name it.

The active adapter lives in the model's layers (``LoRALinear`` / ``GateUpLoRA``, as
:func:`~.lora.apply_lora` puts them); the others are parked: their ``lora_config`` and their
layers, taken off with their parameters (peft's ``unload`` puts the base layers back,
nothing folded in). Switching swaps the layers, so a parameter is the same object whenever
its adapter is active (an optimizer over two adapters keeps its references). The adapter
made active is trainable (peft's ``set_adapter`` without ``inference_mode``); the model
keeps its mode and whether its adapters are disabled. Adapters that train embedding rows
(``trainable_token_indices``) or whole modules (``modules_to_save``) change the base
model's own layers: one error when a second adapter is asked for on such a model.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

__all__ = ["adapter_names", "active_name", "adapter_configs", "load_named", "set_active",
           "delete_named", "forget_parked", "each_adapter", "add_weighted", "add_fresh",
           "name_first", "parked_size", "AdapterConfig", "unload_all",
           "set_trainable", "also_active", "attach_also", "detach_also", "set_many"]


def _registry(model) -> dict:
    """``{"active": name, "parked": {name: (lora_config, {param: array})}, "order": [...]}``
    (peft's ``peft_config`` order: the order the adapters came)."""
    reg = model.__dict__.get("_lora_adapters")
    if reg is None:
        reg = model.__dict__["_lora_adapters"] = {"active": "default", "parked": {},
                                                  "order": ["default"]}
    return reg


def name_first(model, adapter_name: str) -> None:
    """The name of a model's only adapter (``"default"`` unless the user names it)."""
    model.__dict__["_lora_adapters"] = {"active": adapter_name, "parked": {},
                                        "order": [adapter_name]}


def adapter_names(model) -> list[str]:
    from .lora import has_lora

    if not has_lora(model):
        return []
    return list(_registry(model)["order"])


def active_name(model) -> str:
    return _registry(model)["active"]


def forget_parked(model) -> None:
    """No adapter left: the names go too."""
    model.__dict__.pop("_lora_adapters", None)


def _adapter_layers(model):
    from .lora import GateUpLoRA, LoRALinear

    return [(n, m) for n, m in model.named_modules() if isinstance(m, (LoRALinear, GateUpLoRA))]


def _check_swappable(cfg: dict | None, whose: str) -> None:
    """One error when the adapter of ``cfg`` (``whose``) changes the base model's layers."""
    cfg = cfg or {}
    if cfg.get("trainable_token_indices") is not None or cfg.get("modules_to_save"):
        raise ValueError(f"{whose} trains embedding rows or whole modules "
                         "(trainable_token_indices / modules_to_save), which change the base "
                         "model's layers: skiff holds several named adapters, and takes them "
                         "off, only when they are LoRA layers alone; use another model for it")


def _unload(model) -> dict:
    """peft's ``unload()``: the base layers back, nothing folded in; returns the adapter
    layers taken off (``{dotted name: layer}``; the other active adapters of a list first
    taken off, :func:`detach_also`)."""
    from .lora import base_linear

    detach_also(model)
    modules = dict(model.named_modules())
    taken = {}
    for name, m in _adapter_layers(model):
        owner, _, attr = name.rpartition(".")
        parent = modules[owner] if owner else model
        taken[name] = m
        if attr == "gate_up_lora":
            parent.gate_up_lora = None
            continue
        setattr(parent, attr, base_linear(m))
    model.__dict__.pop("lora_config", None)
    return taken


def _park(model) -> tuple[dict, dict]:
    """Take the active adapter off the model: ``(lora_config, its layers)``; the layers
    keep their parameters (an optimizer's references stay valid across switches)."""
    _check_swappable(model.lora_config, "the model's adapter")
    config = dict(model.lora_config)
    return config, _unload(model)


def _restore(model, record, disabled: bool | None = None) -> None:
    """Put a parked adapter's layers back in place, trainable, in the model's mode
    (``disabled``: switched off or on, as the adapter it replaces was; None: as they
    were)."""
    config, layers = record
    modules = dict(model.named_modules())
    ref = model.model.embed_tokens.weight  # the model's dtype and device now
    for name, m in layers.items():
        owner, _, attr = name.rpartition(".")
        setattr(modules[owner] if owner else model, attr, m)
        if any(p.dtype != ref.dtype or p.device != ref.device for p in m.parameters()):
            m.to(ref.device, ref.dtype)  # model.to() / .half() ran while it was parked
        for key, p in m.named_parameters():
            p.requires_grad = key not in ("weight", "bias")  # the base layer's: frozen
        m.train(model.training)
        if disabled is not None:
            m.disabled = disabled
    model.lora_config = dict(config)


def load_named(model, path, adapter_name: str) -> None:
    """``load_adapter(DIR, adapter_name=name)`` on a model that has an adapter: the new one
    parked beside it (peft leaves the active adapter as it was)."""
    from .lora import load_adapter

    _new_name(model, adapter_name)
    cfg_path = Path(path).expanduser() / "adapter_config.json"
    if cfg_path.is_file():
        _check_swappable(json.loads(cfg_path.read_text()), f"adapter {adapter_name!r}")
    _park_new(model, adapter_name, lambda: load_adapter(model, path))


def _new_name(model, adapter_name: str) -> None:
    if adapter_name in _registry(model)["order"]:
        raise ValueError(f"Adapter with name {adapter_name} already exists. Please use a "
                         "different name.")


def _park_new(model, adapter_name: str, build) -> None:
    """``build()`` the adapter's layers on the model with the active adapter set aside, park
    them under ``adapter_name`` and put the active one back (a failed build's layers go)."""
    reg = _registry(model)
    also = detach_also(model)
    active = _park(model)
    try:
        build()
        reg["parked"][adapter_name] = _park(model)
        reg["order"].append(adapter_name)
    finally:
        if getattr(model, "lora_config", None) is not None:
            _unload(model)  # a failed build's layers
        _restore(model, active)
        attach_also(model, also)


def set_active(model, adapter_name: str) -> None:
    reg = _registry(model)
    detach_also(model)
    if adapter_name == reg["active"]:
        return
    record = reg["parked"].pop(adapter_name)
    disabled = any(m.disabled for _, m in _adapter_layers(model))
    reg["parked"][reg["active"]] = _park(model)
    _restore(model, record, disabled)
    reg["active"] = adapter_name


def also_active(model) -> list[str]:
    """The adapters active beside the model's own one (``set_adapter([a, b])``)."""
    reg = model.__dict__.get("_lora_adapters") or {}
    return list(reg.get("also", ()))


def attach_also(model, names) -> None:
    """peft's several active adapters: each of ``names`` (parked) summed into the layers
    beside the active one (a layer that has one gets the pair as a
    :class:`~.lora.LoRAExtra`, a plain one the adapter's own layer), trainable, switched
    off or on as the active one is. They stay parked (``peft_config``, saving, switching
    read them there); :func:`detach_also` takes them off."""
    from ..core import nn
    from .lora import GateUpLoRA, LoRAExtra, LoRALinear

    reg = _registry(model)
    disabled = any(m.disabled for _, m in _adapter_layers(model))
    ref = model.model.embed_tokens.weight
    placed = reg.setdefault("placed", [])
    for name in names:
        config, layers = reg["parked"][name]
        modules = dict(model.named_modules())
        for lname, m in layers.items():
            owner, _, attr = lname.rpartition(".")
            parent = modules[owner] if owner else model
            spot = getattr(parent, attr, None)
            if isinstance(spot, (LoRALinear, GateUpLoRA)):
                if spot.also is None:
                    spot.also = nn.ModuleDict()
                spot.also[name] = LoRAExtra(m)
            else:
                setattr(parent, attr, m)
                placed.append(lname)
            if any(p.dtype != ref.dtype or p.device != ref.device for p in m.parameters()):
                m.to(ref.device, ref.dtype)
            for key, p in m.named_parameters():
                p.requires_grad = key not in ("weight", "bias")
            m.train(model.training)
            m.disabled = disabled
        reg.setdefault("also", []).append(name)


def detach_also(model) -> list[str]:
    """The other active adapters taken off the layers (they stay parked); returns their
    names."""
    from .lora import base_linear

    reg = model.__dict__.get("_lora_adapters") or {}
    names = reg.pop("also", [])
    if not names:
        return []
    for _, m in _adapter_layers(model):  # a placed layer may hold a later adapter's pair
        m.also = None
    modules = dict(model.named_modules())
    for lname in reg.pop("placed", []):
        owner, _, attr = lname.rpartition(".")
        parent = modules[owner] if owner else model
        setattr(parent, attr, None if attr == "gate_up_lora" else base_linear(
            getattr(parent, attr)))
    return names


def set_many(model, names) -> None:
    """peft's ``set_adapter([a, b, ...])``: the first made active, the others summed in
    (:func:`attach_also`)."""
    set_active(model, names[0])
    detach_also(model)
    attach_also(model, [n for n in names[1:] if n != names[0]])


def delete_named(model, adapter_name: str) -> None:
    """peft's ``delete_adapter``: a parked one is dropped; the active one is taken off and
    the first adapter left by name becomes active, with peft's warning (none left: the
    base model)."""
    reg = _registry(model)
    reg["order"].remove(adapter_name)
    if adapter_name != reg["active"]:
        del reg["parked"][adapter_name]
        return
    _check_swappable(model.lora_config, "the model's adapter")
    _unload(model)
    if reg["order"]:
        reg["active"] = sorted(reg["order"])[0]  # peft's pick: the first name in order
        warnings.warn(f"Adapter {adapter_name} was active which is now deleted. Setting "
                      f"active adapter to {reg['active']}.", stacklevel=3)
        _restore(model, reg["parked"].pop(reg["active"]))
    else:
        forget_parked(model)  # the base model, its weights frozen as peft leaves them


def each_adapter(model):
    """Yields each adapter's name with it active (the active one first, then the others in
    their order), the active one active again at the end: for writing them all."""
    reg = _registry(model)
    first, also = reg["active"], detach_also(model)
    try:
        yield first
        for name in [n for n in reg["order"] if n != first]:
            set_active(model, name)
            yield name
    finally:
        set_active(model, first)
        attach_also(model, also)


class AdapterConfig(dict):
    """One adapter's settings, by key or by attribute as peft's ``LoraConfig``
    (``model.peft_config["default"].r``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"LoRA config has no {name!r}") from None


def adapter_configs(model) -> dict:
    """``{name: lora_config}`` of every adapter, in their order (peft's ``peft_config``)."""
    reg = _registry(model)
    return {n: AdapterConfig(model.lora_config if n == reg["active"] else reg["parked"][n][0])
            for n in reg["order"]}


def parked_size(model) -> int:
    """The parameters the parked adapters hold (peft counts every adapter in
    ``print_trainable_parameters``' all)."""
    reg = model.__dict__.get("_lora_adapters") or {"parked": {}}
    return sum(int(p.size) for name, (_, layers) in reg["parked"].items()
               if name not in reg.get("also", ()) for m in layers.values()
               for key, p in m.named_parameters() if key not in ("weight", "bias"))


def _layer_factors(model, name: str) -> dict:
    """``{layer: (A, B, scaling)}`` of adapter ``name`` (made active to read it)."""
    from .lora import LoRALinear

    set_active(model, name)
    out = {}
    for layer, m in _adapter_layers(model):
        if not isinstance(m, LoRALinear):
            raise ValueError(f"add_weighted_adapter: adapter {name!r} has expert adapters, "
                             "which skiff does not combine (peft refuses them too)")
        # a DoRA adapter's magnitude is not mixed (peft mixes its A and B alone; the new
        # adapter, DoRA when the first is, starts from its own magnitude ||W||)
        out[layer] = (m.lora_A.weight.numpy().astype(np.float32),
                      m.lora_B.weight.numpy().astype(np.float32), m.scaling)
    return out


_MIXES = ("ties", "dare_ties", "dare_linear", "magnitude_prune")


def _prune(t: np.ndarray, density: float, random: bool) -> np.ndarray:
    """peft's ``prune``: the largest ``int(density * size)`` magnitudes kept, or (DARE) each
    entry kept with probability ``density`` and the kept ones divided by it; the draws are
    skiff's generator's (``skiff.manual_seed``), not torch's."""
    if density >= 1:
        warnings.warn(f"The density {density} is greater than or equal to 1, no pruning will "
                      "be performed.", stacklevel=6)
        return t
    if density < 0:
        raise ValueError(f"Density should be >= 0, got {density}")
    if random:
        from ..core.random import get_generator

        return t * (get_generator().random(t.shape) < density) / np.float32(density)
    flat = np.abs(t).reshape(-1)
    keep = np.zeros(flat.size, dtype=t.dtype)
    k = int(density * flat.size)
    if k:
        keep[np.argpartition(-flat, k - 1)[:k]] = 1
    return t * keep.reshape(t.shape)


def _mix(tensors: list, weights: list, kind: str, density, sign_method: str) -> np.ndarray:
    """peft's ``merge_utils`` of one list of tensors: ``linear`` (task arithmetic, the
    weighted sum), ``magnitude_prune``, ``ties`` (pruned by magnitude, then the weighted
    values that agree with the majority sign averaged), ``dare_linear`` / ``dare_ties`` (the
    same pruned at random)."""
    w = np.asarray(weights, dtype=np.float32).reshape((-1,) + (1,) * tensors[0].ndim)
    if kind != "linear":
        if density is None:
            raise ValueError(f"combination_type={kind!r} needs a density (the fraction of "
                             "each adapter's values kept, 0..1)")
        tensors = [_prune(t, float(density), kind.startswith("dare")) for t in tensors]
    stack = np.stack(tensors)
    if not kind.endswith("ties"):
        return (stack * w).sum(axis=0)
    if sign_method not in ("total", "frequency"):
        raise RuntimeError(f'Unimplemented mask method "{sign_method}"')
    sign = np.sign(stack)
    votes = (stack if sign_method == "total" else sign).sum(axis=0)
    agree = sign == np.where(votes >= 0, 1, -1)
    return (stack * w * agree).sum(axis=0) / np.maximum(agree.sum(axis=0), 1)


def _combined(parts: list, kind: str, rank: int, density=None, sign_method="total"):
    """peft's new ``(A, B)`` of one layer from ``[(A, B, scaling, weight)]``: ``cat`` puts
    the ranks side by side; ``linear`` and the mixes combine the ``A`` and the ``B``
    matrices each (``A`` weighted by ``sign sqrt(|w s|)``, ``B`` by ``sqrt(|w s|)``);
    ``svd`` and the ``*_svd`` mixes combine the deltas ``s B A`` and cut them to ``rank``."""
    if kind == "cat":
        A = np.concatenate([a * w * s for a, _, s, w in parts], axis=0)
        B = np.concatenate([b for _, b, _, _ in parts], axis=1)
        return (np.pad(A, ((0, rank - A.shape[0]), (0, 0))),
                np.pad(B, ((0, 0), (0, rank - B.shape[1]))))
    if not kind.endswith("svd"):
        root = [np.sqrt(abs(w * s)) for _, _, s, w in parts]
        signs = [1.0 if w * s >= 0 else -1.0 for _, _, s, w in parts]
        return (_mix([a for a, _, _, _ in parts], [r * g for r, g in zip(root, signs)], kind,
                     density, sign_method),
                _mix([b for _, b, _, _ in parts], root, kind, density, sign_method))
    mix = "linear" if kind == "svd" else kind.removesuffix("_svd")
    delta = _mix([s * (b @ a) for a, b, s, _ in parts], [w for *_, w in parts], mix, density,
                 sign_method)
    U, S, Vh = np.linalg.svd(delta.astype(np.float32), full_matrices=False)
    U, Vh = U[:, :rank] * S[:rank], Vh[:rank]
    return Vh, U


def add_weighted(model, adapters, weights, adapter_name: str, combination_type: str = "svd",
                 svd_rank=None, density=None, majority_sign_method: str = "total") -> None:
    """peft's ``add_weighted_adapter`` for ``cat`` (exact: the adapters' ranks side by
    side, each ``A`` times its weight and scaling), ``linear`` (same ranks: ``A`` the sum of
    ``sign sqrt(|w s|) A``, ``B`` of ``sqrt(|w s|) B``, peft's rough mix), ``svd`` (the
    weighted sum of the deltas cut to ``svd_rank``, default the largest rank), and the mixes
    ``ties`` / ``dare_ties`` / ``dare_linear`` / ``magnitude_prune`` (of the ``A`` and ``B``
    matrices, same ranks) and their ``*_svd`` forms (of the deltas), with ``density`` and
    ``majority_sign_method`` (:func:`_mix`; DARE draws from skiff's generator); the new
    adapter has ``lora_alpha = r`` and is not made active, as peft. (peft's ``svd_clamp``
    clips by a quantile of the singular vectors' entries, which depends on the SVD's signs:
    refused by the method.)"""
    from .lora import apply_lora_config

    reg = _registry(model)
    if adapter_name in reg["order"]:
        return  # peft's: the name is taken, nothing done
    configs = adapter_configs(model)
    for name in adapters:
        if name not in configs:
            raise ValueError(f"Adapter {name} does not exist")
    for name in adapters:
        if configs[name].get("target_parameters"):
            raise ValueError("add_weighted_adapter does not support targeting nn.Parameter "
                             f"(problematic adapter '{name}')")
    kind = "linear" if len(adapters) == 1 else combination_type
    ranks = [max([c["r"], *(c.get("rank_pattern") or {}).values()])
             for c in (configs[n] for n in adapters)]
    if kind in ("linear", *_MIXES):
        if len(set(ranks)) != 1:
            raise ValueError("All adapters must have the same r value when using "
                             "combination_type linear, ties, dare_ties or dare_linear.")
        rank = ranks[0]
    elif kind == "cat":
        rank = sum(ranks)
    elif kind in ("svd", *(f"{m}_svd" for m in _MIXES)):
        rank = int(svd_rank or max(ranks))
    else:
        raise ValueError(f"Invalid combination_type: {combination_type}")
    kinds = {isinstance(configs[n]["target_modules"], str) for n in adapters}
    if len(kinds) > 1:
        raise ValueError("all adapter configs should follow the same target modules type. "
                         "Combining adapters with `target_modules` type being a mix of "
                         "list/set and string is not supported.")
    targets = "|".join(f"({configs[n]['target_modules']})" for n in adapters) if kinds == {True} \
        else sorted(set().union(*(configs[n]["target_modules"] for n in adapters)))
    first, also = reg["active"], detach_also(model)
    factors = {}
    for name, weight in zip(adapters, weights):
        for layer, (a, b, s) in _layer_factors(model, name).items():
            factors.setdefault(layer, []).append((a, b, s, float(weight)))
    where = {n: i for i, (n, _) in enumerate(model.named_modules())}
    # in peft's layer order, before the new layers draw their init (DARE's draws come first)
    mixed = {layer: _combined(parts, kind, rank, density, majority_sign_method)
             for layer, parts in sorted(factors.items(), key=lambda kv: where[kv[0]])}
    config = dict(configs[adapters[0]], r=rank, lora_alpha=float(rank), target_modules=targets,
                  alpha_pattern={}, rank_pattern={})
    held = _park(model)
    try:
        apply_lora_config(model, config)
        params = dict(model.named_parameters())
        for layer, (A, B) in mixed.items():
            for key, value in ((f"{layer}.lora_A.weight", A), (f"{layer}.lora_B.weight", B)):
                p = params[key]
                p._data[...] = p.xp.asarray(value).astype(p.dtype)
        reg["parked"][adapter_name] = _park(model)
        reg["order"].append(adapter_name)
    finally:
        if getattr(model, "lora_config", None) is not None:
            _unload(model)
        _restore(model, held)
    set_active(model, first)
    attach_also(model, also)


def _lora_kwargs(config) -> dict:
    """A peft ``LoraConfig`` (or its dict) as :func:`~.lora.apply_lora_config`'s config."""
    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    peft_type = str(getattr(cfg.get("peft_type"), "value", cfg.get("peft_type") or "LORA"))
    if peft_type.upper() != "LORA":
        raise ValueError(f"add_adapter: a {peft_type} config; skiff adapts with LoRA only")
    targets = cfg.get("target_modules")
    if targets is None:
        raise ValueError("add_adapter: the LoraConfig names no target_modules (skiff does not "
                         "guess them per architecture: e.g. ['q_proj', 'v_proj'])")
    for key, default in (("bias", "none"), ("fan_in_fan_out", False)):
        if cfg.get(key, default) not in (default, None):
            raise ValueError(f"add_adapter: {key}={cfg[key]!r} is not supported by skiff's LoRA")
    return {"r": int(cfg.get("r", 8)), "lora_alpha": float(cfg.get("lora_alpha", 8)),
            "lora_dropout": float(cfg.get("lora_dropout") or 0.0),
            "target_modules": targets if isinstance(targets, str) else sorted(targets),
            "target_parameters": list(cfg.get("target_parameters") or []),
            **{k: cfg.get(k) for k in ("trainable_token_indices", "modules_to_save",
                                       "use_rslora", "rank_pattern", "alpha_pattern",
                                       "use_dora", "layers_to_transform", "layers_pattern",
                                       "exclude_modules")}}


def add_fresh(model, config, adapter_name: str, activate: bool) -> None:
    """A new adapter from a peft ``LoraConfig`` (transformers' ``add_adapter``: made active;
    peft's: not): ``B`` zero, so the model's outputs are unchanged while it is active."""
    from .lora import apply_lora_config, has_lora

    kwargs = _lora_kwargs(config)
    if not has_lora(model):
        apply_lora_config(model, kwargs)
        name_first(model, adapter_name)
        return
    _new_name(model, adapter_name)
    _check_swappable(kwargs, f"adapter {adapter_name!r}")
    _park_new(model, adapter_name, lambda: apply_lora_config(model, kwargs))
    if activate:
        set_active(model, adapter_name)


def unload_all(model):
    """peft's ``unload()``: every adapter taken off, nothing folded in; the base model
    (its weights frozen, as peft leaves them) is returned."""
    _check_swappable(model.lora_config, "the model's adapter")
    _unload(model)
    forget_parked(model)
    return model


def set_trainable(model, flag: bool) -> None:
    """The active adapter's own parameters trainable or frozen (peft's ``set_adapter(...,
    inference_mode=)``)."""
    for _, m in _adapter_layers(model):  # the extras of a list are submodules of these
        for key, p in m.named_parameters():
            if not key.endswith(("weight", "bias")) or "lora_" in key:
                p.requires_grad = flag

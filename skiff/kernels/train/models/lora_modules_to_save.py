"""peft's ``modules_to_save`` beside LoRA: whole modules (the embedding, the head, a norm)
trained in full and saved in the adapter, as ``peft.LoraConfig(modules_to_save=[...])``.

``apply_lora(model, ..., modules_to_save=["lm_head"])`` makes every parameter of the named
modules trainable. peft names a module as its ``target_modules`` do (the whole dotted name,
or any end of it: ``"lm_head"``, ``"embed_tokens"``, ``"model.norm"``) and trains a copy of
it; on a model whose head is tied to the embedding that copy unties them (the trained head
no longer reads the embedding, or the trained embedding no longer feeds the head). skiff
unties the same way: the head gets its own Parameter (a copy of the table) and the config
says ``tie_word_embeddings = False``, so a merged folder keeps both tables and transformers
reads back the trained one (a tied config would tie them again on load).

``save_adapter`` writes the modules' parameters under peft's names
(``base_model.model.lm_head.weight``) and ``modules_to_save`` in ``adapter_config.json``;
``load_adapter`` reads them back (what ``PeftModel.from_pretrained`` does).
"""

from __future__ import annotations

import numpy as np

from ..core import nn
from ..core.nn import Parameter

__all__ = ["apply_modules_to_save", "saved_modules", "module_tensors", "take_module_values",
           "take_router_biases", "use_base_modules"]

_EMBEDDING_NAMES = ("lm_head", "model.embed_tokens")


def _named(full: str, names) -> bool:
    """peft's rule: a module is named when its dotted name ends with a given string (so
    ``"norm"`` names every ``*_layernorm`` and ``model.norm``, as in peft)."""
    return any(full.endswith(n) for n in names)


def saved_modules(model, names) -> list[tuple[str, nn.Module]]:
    """(dotted name, module) of every module ``names`` names (outermost only)."""
    out = []
    for full, module in model.named_modules():
        if full and _named(full, names) and not any(full.startswith(f + ".") for f, _ in out):
            out.append((full, module))
    return out


def _untie(model) -> None:
    """Give the head its own copy of the embedding table (peft's copy unties them)."""
    emb = model.model.embed_tokens.weight
    head = model.lm_head
    if head.weight is not emb:
        return
    head.weight = Parameter(emb.xp.array(emb._data, copy=True), requires_grad=False,
                            dtype=emb.dtype)
    model.config.tie_word_embeddings = False


def apply_modules_to_save(model, names, lora_names=(), token_indices=None) -> list[str]:
    """Make the modules ``names`` names trainable (untying a tied head first when it or the
    embedding is among them); returns their dotted names. A name that matches no module, a
    module that LoRA adapts too, or the embedding both here and in
    ``trainable_token_indices`` is one error."""
    names = [names] if isinstance(names, str) else [str(n) for n in names]
    found = saved_modules(model, names)
    missing = [n for n in names if not any(_named(f, [n]) for f, _ in found)]
    if missing:
        raise ValueError(f"modules_to_save {missing} name no module of this model (e.g. "
                         "'lm_head', 'embed_tokens', 'model.norm')")
    both = [f for f, _ in found if f in lora_names]
    if both:
        raise ValueError(f"modules_to_save {both}: these layers are LoRA targets too; name "
                         "each in one list (as peft)")
    if token_indices is not None and any(f in _EMBEDDING_NAMES for f, _ in found):
        raise ValueError("modules_to_save trains the whole embedding/head: drop "
                         "trainable_token_indices (its rows are trained then) or name neither "
                         "table in modules_to_save")
    if model.config.tie_word_embeddings and any(f in _EMBEDDING_NAMES for f, _ in found):
        _untie(model)
        found = saved_modules(model, names)
    base = {}
    for full, module in found:
        for pname, p in module.named_parameters():
            p.requires_grad = True
            base[f"{full}.{pname}"] = p.xp.array(p._data, copy=True)
    model._saved_module_base = base  # peft's original_module: for disable_adapter
    model._saved_module_trained = {}
    return [f for f, _ in found]


def use_base_modules(model, off: bool) -> None:
    """peft's disabled ``modules_to_save``: each saved module's parameters become frozen
    copies of their values when ``apply_lora`` named them (``off``), the trained ones back
    otherwise (an optimizer's Parameters are the trained ones throughout)."""
    base = getattr(model, "_saved_module_base", None) or {}
    held = model._saved_module_trained if base else {}
    modules = dict(model.named_modules()) if base else {}
    for name, value in base.items():
        owner, _, attr = name.rpartition(".")
        module = modules[owner]
        if off and name not in held:
            held[name] = getattr(module, attr)
            setattr(module, attr, Parameter(value, requires_grad=False, dtype=value.dtype))
        elif not off and name in held:
            setattr(module, attr, held.pop(name))


_ROUTER_BIAS = ".moe_statics.e_score_correction_bias"


def module_tensors(model, names) -> dict[str, np.ndarray]:
    """peft's adapter tensors of the saved modules: ``base_model.model.<name>.<param>``;
    an MoE router (``mlp.gate``) with its expert bias, which transformers' router module
    holds (``mlp.gate.moe_statics.e_score_correction_bias``) and peft's copy saves."""
    out = {}
    modules = None
    for full, module in saved_modules(model, names):
        for pname, p in module.named_parameters():
            out[f"base_model.model.{full}.{pname}"] = p.numpy()
        if full.endswith(".mlp.gate"):
            modules = modules or dict(model.named_modules())
            statics = getattr(modules.get(full.rpartition(".")[0]), "moe_statics", None)
            if statics is not None:
                out[f"base_model.model.{full}{_ROUTER_BIAS}"] = \
                    statics.e_score_correction_bias.numpy()
    return out


def take_router_biases(values: dict) -> dict[str, np.ndarray]:
    """The routers' expert biases among a saved module's tensors (peft saves
    ``mlp.gate.moe_statics.e_score_correction_bias`` with a router named in
    ``modules_to_save``: transformers' router module holds it), removed from ``values``,
    under skiff's buffer names (``mlp.moe_statics.e_score_correction_bias``)."""
    return {key.replace(".mlp.gate" + _ROUTER_BIAS, ".mlp" + _ROUTER_BIAS): values.pop(key)
            for key in [k for k in values if k.endswith(".mlp.gate" + _ROUTER_BIAS)]}


def take_module_values(values: dict, names) -> dict[str, np.ndarray]:
    """The entries of ``values`` (peft's names without ``base_model.model.``) that belong to
    the saved modules, removed from ``values``; peft's in-memory names
    (``lm_head.modules_to_save.default.weight``) are read as the saved ones."""
    out = {}
    for key in list(values):
        name = key.replace(".modules_to_save.default.", ".")
        module = name.removesuffix(_ROUTER_BIAS) if name.endswith(
            ".mlp.gate" + _ROUTER_BIAS) else name.rpartition(".")[0]
        if ".lora_" not in name and "token_adapter" not in name and _named(module, names):
            out[name] = values.pop(key)
    return out

"""LoRA: low-rank adapters on a model's linear layers, trained while the base stays frozen.

``apply_lora(model, r=8, alpha=16, target_modules=("q_proj", "v_proj"))`` replaces every
``nn.Linear`` whose attribute name is in ``target_modules`` by a :class:`LoRALinear`:
``y = x W^T + b + (alpha / r) * (x A^T) B^T`` with ``A`` (r, in) drawn as peft draws it
(Kaiming-uniform, ``a = sqrt(5)``) and ``B`` (out, r) zero, so the model starts unchanged.
The base weight keeps its name (``...q_proj.weight``); the adapter is ``...q_proj.lora_A`` /
``lora_B``, peft's names. Every other parameter is frozen (``requires_grad = False``).

The experts of an MoE layer are adapted when ``target_modules`` names them as peft's
``target_parameters`` do: ``"experts.gate_up_proj"`` and ``"experts.down_proj"``.
transformers keeps each layer's experts fused ((E, 2I, C) gate+up, (E, C, I) down) and peft
puts one rank-``r`` adapter on each expert's slice; skiff keeps experts as separate layers,
so expert ``e`` gets a :class:`GateUpLoRA` (one ``A`` (r, C) shared by its gate and up
projections, ``B`` (2I, r)) and a :class:`LoRALinear` on its ``down_proj``: the same
function, and ``save_adapter`` writes peft's fused layout. The router is never adapted.

``save_adapter(model, DIR)`` writes peft's layout (``adapter_config.json``,
``adapter_model.safetensors``) so ``peft.PeftModel.from_pretrained(base, DIR)`` loads it;
``merge_lora(model)`` folds the adapters into the base weights (``W + scale * B A``) and
puts plain Linear layers back, for a merged checkpoint.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np

from ..core import nn
from ..core.nn import functional as F
from ..core.nn.layers import uniform_
from . import safetensors_io as st
from .lora_modules_to_save import (
    apply_modules_to_save,
    module_tensors,
    take_module_values,
    take_router_biases,
)
from .lora_tokens import (
    apply_trainable_tokens,
    merged_rows,
    remove_trainable_tokens,
    token_adapter,
)

__all__ = ["LoRALinear", "GateUpLoRA", "LoRAExtra", "apply_lora", "apply_lora_config", "merge_lora",
           "merged_state_dict", "save_adapter", "load_adapter", "lora_modules", "has_lora",
           "EXPERT_TARGETS"]

# expert targets, as peft's target_parameters name transformers' fused expert weights
EXPERT_TARGETS = ("experts.gate_up_proj", "experts.down_proj")


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update. With ``dora`` (peft's
    ``use_dora``): weight-decomposed LoRA, ``W' = m (W + s B A) / ||W + s B A||`` per output
    row, the magnitude ``m`` (``lora_magnitude_vector``, out) trained too and the norm held
    constant in backward, as peft (DoRA's section 4.3). With a dropout drawing (training
    mode; round 41, was refused): ``W x + b + (f - 1) W x' + f s B A x'``, ``x'`` the
    dropped input and ``f = m / ||W + s B A||``, as peft's DoRA layer."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0,
                 rslora: bool = False, dora: bool = False):
        super().__init__()
        self.in_features, self.out_features = base.in_features, base.out_features
        self.weight = base.weight
        self.bias = base.bias
        self.r, self.alpha = int(r), float(alpha)
        self.scaling = _scaling(self.alpha, self.r, rslora)
        dtype = base.weight.dtype
        self.lora_A = nn.Linear(self.in_features, self.r, bias=False, dtype=dtype)
        bound = 1.0 / math.sqrt(self.in_features)  # kaiming_uniform(a=sqrt(5)), as peft
        self.lora_A.weight._data[...] = uniform_((self.r, self.in_features), bound, dtype=dtype)
        self.lora_B = nn.Linear(self.r, self.out_features, bias=False, dtype=dtype)
        self.lora_B.weight._data[...] = 0
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.lora_magnitude_vector = None
        if dora:
            self.lora_magnitude_vector = nn.Parameter(self._row_norms(), dtype=dtype)

    def _row_norms(self, part=None):
        """``||W + s B A||`` per output row (an array on the weight's device, no graph);
        ``part``: another active adapter's pair on this layer (its own B A and s)."""
        part = self if part is None else part
        xp = self.weight.xp
        w = self.weight._data.astype(np.float32) + part.scaling * (
            part.lora_B.weight._data.astype(np.float32) @ part.lora_A.weight._data.astype(
                np.float32))
        return xp.sqrt((w * w).sum(axis=1)).astype(self.weight.dtype)

    disabled = False  # ``with model.disable_adapter():`` the base layer alone (round 30)
    also = None  # other active adapters' pairs (``set_adapter([a, b])``), a ModuleDict
    merged_adapters = ()  # ``merge_adapter()``: those in the weight now (lora_merge.py)

    @property
    def merged(self) -> bool:
        """peft's ``layer.merged``: an adapter is merged into this layer's weight."""
        return bool(self.merged_adapters)

    def forward(self, x):
        if self.disabled:
            return F.linear(x, self.weight, self.bias)
        extras = list((self.also or {}).values())
        if extras and any(p.lora_magnitude_vector is not None for p in (self, *extras)):
            return self._forward_in_turn(x, extras)
        h = self.dropout(x) if _dropping(self) else x
        lora = self.lora_B(self.lora_A(h)) * self.scaling
        for extra in extras:
            lora = lora + extra(x)
        if self.lora_magnitude_vector is None:
            return F.linear(x, self.weight, self.bias) + lora
        from ..core.tensor import Tensor

        scale = self.lora_magnitude_vector / Tensor(self._row_norms())  # the norm: constant
        if h is not x:  # a dropout drawn (round 41): peft's DoRA then rescales the base
            # layer's product of the dropped input, added to the base layer's own output
            return F.linear(x, self.weight, self.bias) + F.linear(h, self.weight) * (
                scale - 1) + lora * scale
        y = (F.linear(x, self.weight) + lora) * scale
        return y + self.bias if self.bias is not None else y

    def _forward_in_turn(self, x, extras):
        """Several active adapters with DoRA among them (round 39), as peft's layer runs
        them: each adapter in the list's order on the result so far, a plain one adding its
        ``s B A x``, a DoRA one scaling the result so far (its bias aside) and its own update
        by ``m / ||W + s B A||`` (its own pair's norm, held constant)."""
        from ..core.tensor import Tensor

        y = F.linear(x, self.weight)
        for part in (self, *extras):
            h = part.dropout(x) if _dropping(part) else x
            lora = part.lora_B(part.lora_A(h)) * part.scaling
            if part.lora_magnitude_vector is None:
                y = y + lora
                continue
            scale = part.lora_magnitude_vector / Tensor(self._row_norms(part))
            if h is not x:  # under dropout: W of the dropped input rescaled (peft)
                y = y + F.linear(h, self.weight) * (scale - 1) + lora * scale
            else:
                y = (y + lora) * scale
        return y + self.bias if self.bias is not None else y

    def delta(self) -> np.ndarray:
        """The change of the weight (out, in) as a host array: ``scale * B A``; with DoRA
        ``m (W + s B A) / ||W + s B A|| - W``."""
        extras = list((self.also or {}).values())
        if all(p.lora_magnitude_vector is None for p in (self, *extras)):
            return (self.lora_B.weight.numpy() @ self.lora_A.weight.numpy()) * self.scaling \
                + sum(extra.delta() for extra in extras)
        # each adapter in turn, as peft's merge folds them (a DoRA one's norm of W + its own
        # s B A, as the forward takes it)
        w = self.weight.numpy().astype(np.float32)
        cur = w
        for part in (self, *extras):
            d = (part.lora_B.weight.numpy() @ part.lora_A.weight.numpy()) * part.scaling
            cur = cur + d
            if part.lora_magnitude_vector is not None:
                cur = cur * (part.lora_magnitude_vector.numpy().astype(np.float32) / np.sqrt(
                    ((w + d) ** 2).sum(axis=1)))[:, None]
        return cur - w

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, r={self.r}, alpha={self.alpha}"


class GateUpLoRA(nn.Module):
    """LoRA of one expert's gate and up projections together, as peft adapts the fused
    ``gate_up_proj`` (out 2I): ``[dgate, dup] = (alpha / r) * (x A^T) B^T``, ``A`` (r, C)
    shared, ``B`` (2I, r). The expert's :class:`~.ernie.ErnieMLP` adds them to its own."""

    def __init__(self, gate: nn.Linear, r: int, alpha: float, rslora: bool = False):
        super().__init__()
        self.in_features, self.inner = gate.in_features, gate.out_features
        self.r, self.alpha = int(r), float(alpha)
        self.scaling = _scaling(self.alpha, self.r, rslora)
        dtype = gate.weight.dtype
        self.lora_A = nn.Linear(self.in_features, self.r, bias=False, dtype=dtype)
        bound = 1.0 / math.sqrt(self.in_features)
        self.lora_A.weight._data[...] = uniform_((self.r, self.in_features), bound, dtype=dtype)
        self.lora_B = nn.Linear(self.r, 2 * self.inner, bias=False, dtype=dtype)
        self.lora_B.weight._data[...] = 0

    disabled = False  # ``with model.disable_adapter():`` the expert's own gate and up
    also = None  # other active adapters' pairs (``set_adapter([a, b])``), a ModuleDict
    merged_adapters = ()  # ``merge_adapter()``: those in the weights now (lora_merge.py)
    merged = LoRALinear.merged

    def forward(self, x):
        from ..core.tensor import split

        d = self.lora_B(self.lora_A(x)) * self.scaling
        for extra in (self.also or {}).values():
            d = d + extra(x)
        return split(d, [self.inner, self.inner], axis=-1)

    def delta(self) -> np.ndarray:
        """``scale * B A`` (2I, C): the gate rows, then the up rows."""
        return (self.lora_B.weight.numpy() @ self.lora_A.weight.numpy()) * self.scaling + sum(
            extra.delta() for extra in (self.also or {}).values())


class LoRAExtra(nn.Module):
    """Another active adapter's pair on a layer that holds one (peft's several active
    adapters, ``set_adapter([a, b])``: each layer adds every active adapter's update): the
    adapter's own ``lora_A`` / ``lora_B`` modules (the same Parameters, trained as they
    are), its scaling and dropout."""

    def __init__(self, layer):
        super().__init__()
        self.lora_A, self.lora_B = layer.lora_A, layer.lora_B
        self.scaling = layer.scaling
        self.dropout = getattr(layer, "dropout", None)
        # a DoRA adapter's magnitude (the same Parameter): the layer runs the list in turn
        self.lora_magnitude_vector = getattr(layer, "lora_magnitude_vector", None)

    def forward(self, x):
        h = self.dropout(x) if self.dropout is not None else x
        return self.lora_B(self.lora_A(h)) * self.scaling

    def delta(self) -> np.ndarray:
        return (self.lora_B.weight.numpy() @ self.lora_A.weight.numpy()) * self.scaling


def _dropping(part) -> bool:
    """Whether a LoRA pair's dropout draws now (it has one, in training mode)."""
    return part.dropout is not None and part.dropout.training


def _scaling(alpha: float, r: int, rslora: bool) -> float:
    """peft's ``scaling``: ``alpha / r``, or with rank-stabilised LoRA ``alpha / sqrt(r)``."""
    return alpha / math.sqrt(r) if rslora else alpha / r


def _pattern_value(patterns: dict | None, name: str, default):
    r"""peft's ``rank_pattern`` / ``alpha_pattern`` lookup: the first key ``k`` such that the
    whole dotted ``name`` matches ``(.*\.)?(k)$``."""
    for key, value in (patterns or {}).items():
        if re.match(rf"(.*\.)?({key})$", name):
            return value
    return default


def _expert_targets(target_modules) -> tuple[set, set]:
    """(plain targets, expert targets 'gate_up_proj' / 'down_proj') of a target list."""
    plain, experts = set(), set()
    for t in target_modules:
        t = str(t)
        if t.startswith(("experts.", "mlp.experts.")):
            part = t.rpartition(".")[2]
            if part not in ("gate_up_proj", "down_proj"):
                raise ValueError(f"LoRA target {t!r}: the experts are adapted as "
                                 f"{' and '.join(EXPERT_TARGETS)}")
            experts.add(part)
        else:
            plain.add(t)
    return plain, experts


_ROUTER = ("gate.weight", "mlp.gate.weight")


def _router_targets(model, plain) -> list:
    """(name, MoE block) of every router an MoE model's ``plain`` targets name as peft's
    ``target_parameters`` do (``gate.weight``, which peft's ``all-linear`` and a ``gate``
    target add on transformers 5's ERNIE-4.5 MoE; round 44): taken out of ``plain``."""
    if isinstance(plain, str) or not plain & set(_ROUTER):
        return []
    plain -= set(_ROUTER)
    out = [(n, m) for n, m in model.named_modules()
           if hasattr(m, "moe_statics") and isinstance(getattr(m, "gate", None), nn.Linear)]
    if not out:
        raise ValueError("LoRA target gate.weight (an MoE router): this model has no router")
    return out


def _targets(model, target_modules):
    """(parent, attribute, dotted name, Linear) of every adaptable Linear named in targets
    (a set of layer names; or, as peft reads a string, a regular expression the whole dotted
    name must match; ``"all-linear"``: every adaptable Linear)."""
    out = []
    for name, module in model.named_modules():
        for attr, child in list(module._modules.items()):
            full = f"{name}.{attr}" if name else attr
            if isinstance(target_modules, str):
                named = target_modules == "all-linear" or re.fullmatch(target_modules, full)
            else:  # a layer name, or a whole dotted name (peft matches names by suffix)
                named = attr in target_modules or full in target_modules or any(
                    "." in t and full.endswith("." + t) for t in target_modules)
            if (named and isinstance(child, nn.Linear) and full != "lm_head"
                    and ".experts." not in f".{full}." and not full.endswith("mlp.gate")):
                out.append((module, attr, full, child))
    return out


def _peft_keeps(full: str, exact: bool, layers_to_transform, layers_pattern,
                exclude_modules, saved) -> bool:
    """Whether peft adapts the target ``full`` that ``target_modules`` names: not when
    ``exclude_modules`` names it (a regex of the whole name, or names / name ends), not a
    module of ``modules_to_save``, and with ``layers_to_transform`` only in those layers
    (the first number after ``layers_pattern``, default any name; a target named by its
    whole name or a regex is not filtered, as peft)."""
    if exclude_modules:
        if isinstance(exclude_modules, str):
            if re.fullmatch(exclude_modules, full):
                return False
        elif full in exclude_modules or any(full.endswith(f".{x}") for x in exclude_modules):
            return False
    if saved and any(re.match(rf"(^|.*\.){m}($|\..*)", full) for m in saved):
        return False
    wanted = layers_to_transform
    if exact or wanted is None or (isinstance(wanted, list) and not wanted):
        return True
    patterns = [layers_pattern] if isinstance(layers_pattern, str) else layers_pattern
    hit = None
    if not patterns:
        hit = re.match(r".*?\.[^.]*\.(?P<idx>\d+)\.", full)
    else:
        for pat in patterns:
            hit = re.match(rf"(?:^|.*?\.){pat}\.(?P<idx>\d+)\.", full)
            if hit is not None:
                break
    if hit is None:
        return False
    index = int(hit.group("idx"))
    return index == wanted if isinstance(wanted, int) else index in wanted


def apply_lora(model, r: int = 8, alpha: float = 16, target_modules=("q_proj", "v_proj"),
               dropout: float = 0.0, trainable_token_indices=None, modules_to_save=None,
               use_rslora: bool = False, rank_pattern=None, alpha_pattern=None,
               use_dora: bool = False, layers_to_transform=None, layers_pattern=None,
               exclude_modules=None, *, lora_alpha=None, lora_dropout=None):
    """Adapt ``model`` in place (see the module docstring); returns it. An unknown target
    name (no Linear by that name) is one clear error. ``trainable_token_indices`` (token
    ids, or peft's ``{"embed_tokens": ids}``): those embedding rows are trained too
    (``lora_tokens``), as peft's option of that name. ``modules_to_save`` (module names,
    peft's option): those modules are trained whole and saved in the adapter
    (``lora_modules_to_save``; a tied head is untied, as peft's copy unties it).
    ``use_rslora`` (scaling ``alpha / sqrt(r)``), ``rank_pattern`` / ``alpha_pattern``
    (``{regex: r}``: a layer whose dotted name ends with a match takes that rank / alpha;
    the experts' fused weights by peft's parameter names, ``...mlp.experts.gate_up_proj``)
    are peft's options of those names; ``use_dora`` is peft's DoRA (:class:`LoRALinear`;
    not on the experts); ``layers_to_transform`` / ``layers_pattern`` /
    ``exclude_modules`` leave targets out as peft does (:func:`_peft_keeps`; a module of
    ``modules_to_save`` is never adapted too). ``lora_alpha`` / ``lora_dropout``: peft's
    ``LoraConfig`` names of ``alpha`` / ``dropout`` (a config's keywords work as they are).
    ``gate.weight`` (peft's ``target_parameters`` name, which its ``all-linear`` adds on an
    MoE) adapts each MoE router (round 44: :func:`_router_targets`)."""
    alpha = _peft_alias("alpha", alpha, 16, "lora_alpha", lora_alpha)
    dropout = _peft_alias("dropout", dropout, 0.0, "lora_dropout", lora_dropout)
    if not isinstance(r, (int, np.integer)) or r < 1:
        raise ValueError(f"LoRA rank r must be a positive integer, got {r!r}")
    if not isinstance(target_modules, str) and list(target_modules) == ["all-linear"]:
        target_modules = "all-linear"  # --lora-targets all-linear
    pattern = target_modules if isinstance(target_modules, str) else None
    if pattern is not None:  # as peft: "all-linear", or a regex of whole dotted names
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"LoRA target_modules {pattern!r} is not a regular expression "
                             f"({exc})") from None
        plain, expert_parts = pattern, set()
    else:
        plain, expert_parts = _expert_targets(target_modules)
    routers = _router_targets(model, plain)  # peft's target_parameters 'gate.weight'
    targets = _targets(model, plain)
    found = {attr for _, attr, _, _ in targets} | {full for _, _, full, _ in targets}
    if pattern is not None and not targets:
        raise ValueError(f"LoRA target_modules {pattern!r} matches no linear layer of this "
                         "model (a string is a regular expression of whole names, as in peft: "
                         "'.*\\.(q_proj|v_proj)'; or a list of layer names: ['q_proj', 'v_proj'])")
    found |= {t for t in plain if any(full.endswith("." + t) for _, _, full, _ in targets)} \
        if pattern is None else set()
    missing = sorted(plain - found) if pattern is None else []
    if missing:
        raise ValueError(f"LoRA target_modules {missing} name no linear layer of this model")
    saved_names = [modules_to_save] if isinstance(modules_to_save, str) else \
        list(modules_to_save or [])
    targets = [t for t in targets if _peft_keeps(
        t[2], pattern is not None or t[2] in plain, layers_to_transform, layers_pattern,
        exclude_modules, saved_names)]
    experts = [(n, m) for n, m in model.named_modules() if ".experts." in f".{n}."
               and hasattr(m, "gate_up_lora")]
    if expert_parts and not experts:
        raise ValueError(f"LoRA targets {sorted('experts.' + p for p in expert_parts)}: this "
                         "model has no experts")
    if expert_parts and dropout > 0:
        raise ValueError("LoRA on the experts takes no dropout (as peft)")
    if expert_parts and use_dora:
        raise ValueError("DoRA (use_dora) on the experts is not supported here: adapt the "
                         "attention / dense layers with DoRA, or the experts without it")
    if expert_parts and (layers_to_transform is not None or exclude_modules):
        raise ValueError("layers_to_transform / exclude_modules with LoRA on the experts is "
                         "not supported here")
    if routers and (dropout > 0 or use_dora or layers_to_transform is not None
                    or exclude_modules or modules_to_save and "gate" in (
                        [modules_to_save] if isinstance(modules_to_save, str)
                        else list(modules_to_save))):
        raise ValueError("LoRA on the MoE router (gate.weight) takes no dropout, DoRA, "
                         "layers_to_transform / exclude_modules, nor the router in "
                         "modules_to_save here")
    for p in model.parameters():
        p.requires_grad = False
        p._grad = None
    tokens = _token_indices(trainable_token_indices)
    saved = None
    if modules_to_save:
        saved = apply_modules_to_save(model, modules_to_save, (), tokens)
    for parent, attr, full, linear in targets:
        setattr(parent, attr, LoRALinear(linear, int(_pattern_value(rank_pattern, full, r)),
                                         float(_pattern_value(alpha_pattern, full, alpha)),
                                         dropout, use_rslora, use_dora))
    if tokens is not None:
        apply_trainable_tokens(model, tokens)
    for name, mlp in experts:
        # peft's rank_pattern / alpha_pattern on the fused weights (round 43): keyed by the
        # parameter's name, model.layers.N.mlp.experts.gate_up_proj (peft writes
        # {'.*\.gate_up_proj': 2r} when it reads target_modules gate_proj/up_proj so)
        layer = name.rpartition(".")[0]
        if "gate_up_proj" in expert_parts:
            full = f"{layer}.gate_up_proj"
            mlp.gate_up_lora = GateUpLoRA(mlp.gate_proj, int(_pattern_value(rank_pattern, full, r)),
                                          float(_pattern_value(alpha_pattern, full, alpha)),
                                          use_rslora)
        if "down_proj" in expert_parts:
            full = f"{layer}.down_proj"
            mlp.down_proj = LoRALinear(mlp.down_proj, int(_pattern_value(rank_pattern, full, r)),
                                       float(_pattern_value(alpha_pattern, full, alpha)),
                                       rslora=use_rslora)
    for name, moe in routers:  # as peft's ParamWrapper of the router's weight: W + s B A
        full = f"{name}.gate.weight"
        moe.gate = LoRALinear(moe.gate, int(_pattern_value(rank_pattern, full, r)),
                              float(_pattern_value(alpha_pattern, full, alpha)),
                              rslora=use_rslora)
    model.lora_config = {"r": int(r), "lora_alpha": float(alpha), "lora_dropout": float(dropout),
                         "target_modules": sorted({attr for _, attr, _, _ in targets})
                         if pattern is None  # names; a pattern's layers by full name
                         else sorted(full for _, _, full, _ in targets),
                         "target_parameters": [f"mlp.experts.{p}" for p in
                                               ("gate_up_proj", "down_proj")
                                               if p in expert_parts]
                         + (["mlp.gate.weight"] if routers else []),
                         "trainable_token_indices": tokens,
                         "modules_to_save": saved, "use_rslora": bool(use_rslora),
                         "rank_pattern": dict(rank_pattern or {}),
                         "alpha_pattern": dict(alpha_pattern or {}),
                         "use_dora": bool(use_dora),
                         "layers_to_transform": layers_to_transform,
                         "layers_pattern": layers_pattern, "exclude_modules": exclude_modules}
    return model


def _peft_alias(name, value, default, peft_name, peft_value):
    """``value``, or peft's keyword of the same meaning when given (one clear error when
    both are given and disagree)."""
    if peft_value is None:
        return value
    if value != default and float(value) != float(peft_value):
        raise ValueError(f"apply_lora: {name}={value!r} and {peft_name}={peft_value!r} "
                         f"disagree; give one of them")
    return peft_value


def apply_job_lora(model, lora: dict, seed: int = 0):
    """:func:`apply_lora` from a job config's ``lora`` entry (``--lora-r``, ``--lora-alpha``,
    ``--lora-targets``, ``--lora-dora``, ``--lora-rslora``, ``--lora-modules-to-save``).
    On an MoE ERNIE-4.5 the names ``gate_proj`` / ``up_proj`` / ``down_proj`` are read as
    peft reads them (the routed experts, gate+up fused at rank 2r: :mod:`.lora_moe_peft`).

    The adapters' random ``lora_A`` come from a generator of the job's own, seeded by
    ``seed`` (round 44 h14: they came from the process-wide one, so a notebook's second
    ``%train ... --lora-r`` job, or one after a job of another kind, trained from another
    start than the first and than the command line's, and took the session's draws)."""
    from ..core import random as train_random
    from .lora_moe_peft import peft_job_targets

    targets, rank, alpha = peft_job_targets(model, lora["targets"], lora["r"], lora["alpha"])
    with train_random.using(train_random.new_generator(int(seed))):
        return apply_lora(model, r=lora["r"], alpha=lora["alpha"], target_modules=targets,
                          use_dora=bool(lora.get("dora")),
                          use_rslora=bool(lora.get("rslora")),
                          modules_to_save=lora.get("modules_to_save"), rank_pattern=rank,
                          alpha_pattern=alpha)


def apply_lora_config(model, config: dict):
    """:func:`apply_lora` with every option of another model's ``lora_config`` (what
    :func:`apply_lora` recorded): the same adapters' names and shapes, e.g. on a whole model
    rebuilt from the slices of a split one (the values are then loaded into it)."""
    targets = config["target_modules"]
    if not isinstance(targets, str):
        targets = list(targets) + [p.removeprefix("mlp.")
                                   for p in config.get("target_parameters") or []]
    return apply_lora(model, r=config["r"], alpha=config["lora_alpha"], target_modules=targets,
                      dropout=config.get("lora_dropout", 0.0),
                      trainable_token_indices=config.get("trainable_token_indices"),
                      modules_to_save=config.get("modules_to_save"),
                      use_rslora=bool(config.get("use_rslora")),
                      rank_pattern=config.get("rank_pattern"),
                      alpha_pattern=config.get("alpha_pattern"),
                      use_dora=bool(config.get("use_dora")),
                      layers_to_transform=config.get("layers_to_transform"),
                      layers_pattern=config.get("layers_pattern"),
                      exclude_modules=config.get("exclude_modules"))


def _token_indices(value):
    """peft's ``trainable_token_indices``: a list of ids, or a dict naming the embedding."""
    if value is None:
        return None
    if isinstance(value, dict):
        other = sorted(k for k in value if k not in ("embed_tokens", "model.embed_tokens"))
        if other or len(value) != 1:
            raise ValueError(f"trainable_token_indices names {other or list(value)}: skiff "
                             "trains the rows of embed_tokens only (a list of ids)")
        value = next(iter(value.values()))
    return [int(i) for i in value]


def lora_modules(model) -> list[tuple[str, LoRALinear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]


def gate_up_modules(model) -> list[tuple[str, GateUpLoRA]]:
    """(expert name, adapter) of every expert whose gate and up projections are adapted."""
    return [(n.rpartition(".")[0], m) for n, m in model.named_modules()
            if isinstance(m, GateUpLoRA)]


def has_lora(model) -> bool:
    return bool(lora_modules(model) or gate_up_modules(model)
                or token_adapter(model) is not None)


def merged_state_dict(model) -> dict[str, np.ndarray]:
    """The model's weights with every adapter folded in, under the base names only."""
    state = model.state_dict()

    def fold(key, delta):
        state[key] = (state[key] + delta).astype(state[key].dtype)

    for name, m in lora_modules(model):
        if not getattr(m, "merged_adapters", None):  # merge_adapter(): in the weight now
            fold(f"{name}.weight", m.delta())
        for k in ("lora_A.weight", "lora_B.weight", "lora_magnitude_vector"):
            state.pop(f"{name}.{k}", None)
    for name, m in gate_up_modules(model):
        if not getattr(m, "merged_adapters", None):
            delta = m.delta()
            fold(f"{name}.gate_proj.weight", delta[:m.inner])
            fold(f"{name}.up_proj.weight", delta[m.inner:])
        for k in ("lora_A.weight", "lora_B.weight"):
            state.pop(f"{name}.gate_up_lora.{k}")
    return merged_rows(model, state)


def base_linear(m: LoRALinear) -> nn.Linear:
    """The plain ``nn.Linear`` of a LoRA layer's own weight and bias (no new weights drawn:
    ``nn.Linear()`` would draw and then drop a random matrix)."""
    lin = nn.Linear.__new__(nn.Linear)
    nn.Module.__init__(lin)
    lin.in_features, lin.out_features = m.in_features, m.out_features
    lin.weight, lin.bias = m.weight, m.bias
    return lin


def merge_lora(model):
    """Fold the adapters into the base weights and put plain Linear layers back (all
    parameters trainable again); returns the model."""
    modules = dict(model.named_modules())
    for name, m in lora_modules(model):
        parent = modules[name.rpartition(".")[0]] if "." in name else model
        lin = base_linear(m)
        if not getattr(m, "merged_adapters", None):  # merge_adapter(): in the weight now
            lin.weight._data += lin.weight.xp.asarray(m.delta()).astype(lin.weight.dtype)
        setattr(parent, name.rpartition(".")[2], lin)
    for name, m in gate_up_modules(model):
        mlp = modules[name]
        if not getattr(m, "merged_adapters", None):
            delta = m.delta()
            for lin, part in ((mlp.gate_proj, delta[:m.inner]),
                              (mlp.up_proj, delta[m.inner:])):
                lin.weight._data += lin.weight.xp.asarray(part).astype(lin.weight.dtype)
        mlp.gate_up_lora = None
    remove_trainable_tokens(model)
    for p in model.parameters():
        p.requires_grad = True
    model.__dict__.pop("lora_config", None)
    model.__dict__.pop("_lora_adapters", None)  # other named adapters go too, as peft's
    model.__dict__.pop("_lora_merged", None)  # merge_adapter()'s record (lora_merge.py)
    return model


def save_adapter(model, path: str | os.PathLike, base_model_name_or_path: str | None = None
                 ) -> list[str]:
    """Write the adapters in peft's layout (``adapter_config.json``,
    ``adapter_model.safetensors``); ``peft.PeftModel.from_pretrained(base, path)`` loads them."""
    if not has_lora(model):
        raise ValueError("the model has no LoRA adapters (apply_lora first)")
    folder = Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    experts: dict[str, dict] = {}  # "...mlp.experts" -> {part: {e: (A, B)}}
    for name, m in lora_modules(model):
        pair = (m.lora_A.weight.numpy(), m.lora_B.weight.numpy())
        hit = re.match(r"(.*\.experts)\.(\d+)\.down_proj$", name)
        if hit:
            experts.setdefault(hit.group(1), {}).setdefault("down_proj", {})[
                int(hit.group(2))] = pair
            continue
        tensors[f"base_model.model.{name}.lora_A.weight"] = pair[0]
        tensors[f"base_model.model.{name}.lora_B.weight"] = pair[1]
        if m.lora_magnitude_vector is not None:  # DoRA
            tensors[f"base_model.model.{name}.lora_magnitude_vector"] = \
                m.lora_magnitude_vector.numpy()
    for name, m in gate_up_modules(model):
        prefix, _, e = name.rpartition(".")
        experts.setdefault(prefix, {}).setdefault("gate_up_proj", {})[int(e)] = (
            m.lora_A.weight.numpy(), m.lora_B.weight.numpy())
    for prefix, parts in experts.items():
        tensors.update(_fused_expert_adapters(prefix, parts))
    base = base_model_name_or_path or getattr(model, "source_folder", None)
    tensors.update(_embedding_tensors(model, base))
    if cfg_saved := model.lora_config.get("modules_to_save"):
        tensors.update(module_tensors(model, cfg_saved))
    st.write_file(tensors, folder / "adapter_model.safetensors")
    cfg = dict(model.lora_config)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": cfg["r"],
              "lora_alpha": cfg["lora_alpha"], "lora_dropout": cfg["lora_dropout"],
              "target_modules": cfg["target_modules"] or None,
              "target_parameters": cfg.get("target_parameters") or None, "bias": "none",
              "fan_in_fan_out": False, "use_rslora": bool(cfg.get("use_rslora")),
              "rank_pattern": cfg.get("rank_pattern") or {},
              "alpha_pattern": cfg.get("alpha_pattern") or {}, "inference_mode": True,
              "use_dora": bool(cfg.get("use_dora")),
              "layers_to_transform": cfg.get("layers_to_transform"),
              "layers_pattern": cfg.get("layers_pattern"),
              "exclude_modules": cfg.get("exclude_modules"),
              "trainable_token_indices": cfg.get("trainable_token_indices"),
              "modules_to_save": cfg.get("modules_to_save"),
              "base_model_name_or_path": base}
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    from .lora_moe_peft import warn_peft_misreads

    warn_peft_misreads(model, [n for n, _ in lora_modules(model)], folder)
    written = ["adapter_model.safetensors", "adapter_config.json"]
    # the base's tokenizer files beside it (round 47): a transformers user's
    # AutoTokenizer.from_pretrained(adapter folder) failed, "not a valid model identifier"
    # (peft's users save it there with tokenizer.save_pretrained; TRL's trainer does)
    written += _base_tokenizer_files(base, folder)
    tok = getattr(model, "tokenizer", None)
    if tok is not None and getattr(tok, "_added_now", None):  # tokens added: their tokenizer
        written += [Path(f).name for f in tok.save_pretrained(folder)]
    return list(dict.fromkeys(written))


def _base_tokenizer_files(base, folder: Path) -> list[str]:
    """Copy the tokenizer files of the base checkpoint's folder ``base`` (when it is one)
    into the adapter's ``folder``; the names copied."""
    import shutil

    from .tokenizer_files import TOKENIZER_FILES

    if not isinstance(base, (str, os.PathLike)) or not Path(base).expanduser().is_dir():
        return []
    source = Path(base).expanduser()
    if source.resolve() == folder.resolve():
        return []
    copied = []
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
            copied.append(name)
    return copied


def _base_vocab(base) -> int | None:
    """The vocabulary size of the base folder's ``config.json`` (None: no such folder)."""
    path = Path(str(base)).expanduser() / "config.json" if base else None
    if path is None or not path.is_file():
        return None
    try:
        return int(json.loads(path.read_text()).get("vocab_size"))
    except (ValueError, TypeError):
        return None


def _embedding_tensors(model, base) -> dict[str, np.ndarray]:
    """peft's embedding entries: the trained token rows, and, when the vocabulary differs
    from the base folder's (tokens added, as peft's ``save_embedding_layers="auto"``
    finds), the whole embedding and head, under peft's names."""
    out = {}
    pre = "base_model.model."
    adapter = token_adapter(model)
    tied = model.config.tie_word_embeddings
    if adapter is not None:
        delta = adapter.trainable_tokens_delta.numpy()
        out[f"{pre}model.embed_tokens.token_adapter.trainable_tokens_delta"] = delta
    vocab = _base_vocab(base)
    if vocab is None or vocab == model.config.vocab_size:
        return out
    emb = model.model.embed_tokens.weight.numpy()
    head = model.lm_head.weight.numpy()
    if adapter is None:
        out[f"{pre}model.embed_tokens.weight"] = emb
        out[f"{pre}lm_head.weight"] = head
        return out
    out[f"{pre}model.embed_tokens.token_adapter.base_layer.weight"] = emb
    if tied:
        out[f"{pre}lm_head.token_adapter.base_layer.weight"] = emb
        out[f"{pre}lm_head.token_adapter.trainable_tokens_delta"] = delta
    else:
        out[f"{pre}lm_head.weight"] = head
    return out


def _fused_expert_adapters(prefix: str, parts: dict) -> dict[str, np.ndarray]:
    """peft's tensors for the adapted experts of one layer: per fused weight, ``lora_A``
    (r E, in) with expert ``e``'s rows at ``e r .. e r + r`` and ``lora_B`` (out, r E) with
    its columns at ``j E + e`` (peft reshapes them as (E, r, in) and (out, r, E)). With both
    weights adapted peft nests its wrappers: gate_up_proj's is the ``base_layer`` of
    down_proj's."""
    out = {}
    for part, per_expert in parts.items():
        n = max(per_expert) + 1
        if sorted(per_expert) != list(range(n)):
            raise ValueError(f"{prefix}: {part} adapters missing for some experts")
        A = np.concatenate([per_expert[e][0] for e in range(n)], axis=0)       # (E r, in)
        B = np.stack([per_expert[e][1] for e in range(n)], axis=-1)            # (out, r, E)
        B = B.reshape(B.shape[0], -1)
        inner = ".base_layer" if part == "gate_up_proj" and len(parts) == 2 else ""
        out[f"base_model.model.{prefix}{inner}.lora_A.weight"] = A
        out[f"base_model.model.{prefix}{inner}.lora_B.weight"] = B
    return out


# adapter_config.json entries whose non-default values change the function: refused
_UNSUPPORTED = {"bias": "none", "fan_in_fan_out": False, "lora_bias": False}


def load_adapter(model, path: str | os.PathLike):
    """Put the LoRA adapter of a peft folder (``adapter_config.json``,
    ``adapter_model.safetensors``, as ``PeftModel.save_pretrained`` or :func:`save_adapter`
    writes it) on ``model``: :func:`apply_lora` with its rank, alpha and targets, then its
    ``lora_A``/``lora_B`` values (the fused experts' cut per expert). The model then gives
    ``PeftModel.from_pretrained(base, path)``'s logits (the adapter takes the model's mode:
    evaluation after ``from_pretrained``, so ``lora_dropout`` is off until ``model.train()``,
    as peft); training goes on from the adapter.
    ``modules_to_save`` entries (whole trained modules) are put in their modules (a tied
    head untied, as peft's copy). A setting that changes the function and skiff does not
    have (biases, ``fan_in_fan_out``) or a tensor that does not fit is one error; rsLoRA,
    DoRA, per-layer ranks / alphas, ``layers_to_transform`` and ``exclude_modules`` are
    read."""
    folder = Path(path).expanduser()
    cfg_path, weights = folder / "adapter_config.json", folder / "adapter_model.safetensors"
    if not cfg_path.is_file():
        raise FileNotFoundError(f"{str(folder)!r} is not a peft adapter folder (no "
                                "adapter_config.json)")
    if not weights.is_file():
        more = " (adapter_model.bin is pickled: skiff reads safetensors only)" if (
            folder / "adapter_model.bin").is_file() else ""
        raise FileNotFoundError(f"{str(folder)!r} has no adapter_model.safetensors{more}")
    cfg = json.loads(cfg_path.read_text())
    if cfg.get("peft_type", "LORA") != "LORA":
        raise ValueError(f"{cfg_path}: peft_type {cfg.get('peft_type')!r}; skiff reads LORA")
    for key, default in _UNSUPPORTED.items():
        value = cfg.get(key, default)
        if value not in (default, None, {}, [], False, "none"):
            raise ValueError(f"{cfg_path}: {key} = {value!r} is not supported by skiff's LoRA")
    if has_lora(model):
        raise ValueError("the model has LoRA adapters already (merge_lora first to stack one)")
    targets = cfg.get("target_modules") or []
    params = [_peft_parameter(p) for p in cfg.get("target_parameters") or []]
    if not isinstance(targets, str):
        targets = list(targets) + params
    elif params:
        raise ValueError(f"{cfg_path}: a target_modules pattern with target_parameters is "
                         "not supported; list the modules")
    saved = st.SafetensorsFile(weights)
    values = {}
    for key in saved.keys():
        name = key.removeprefix("base_model.model.").replace(".lora_A.default.", ".lora_A.") \
            .replace(".lora_B.default.", ".lora_B.") \
            .replace(".lora_magnitude_vector.default.weight", ".lora_magnitude_vector")
        values[name] = np.array(saved.get(key, np.float32))
    to_save = cfg.get("modules_to_save") or None
    whole = take_module_values(values, to_save) if to_save else {}
    table = whole.get("model.embed_tokens.weight", whole.get("lm_head.weight"))
    if table is not None and table.shape[0] != model.config.vocab_size:
        model.resize_token_embeddings(table.shape[0])  # a grown vocabulary, trained whole
    _load_embeddings(model, values)  # a grown vocabulary: resized to the adapter's first
    apply_lora(model, r=int(cfg["r"]), alpha=float(cfg.get("lora_alpha", cfg["r"])),
               target_modules=targets, dropout=float(cfg.get("lora_dropout") or 0.0),
               trainable_token_indices=cfg.get("trainable_token_indices"),
               modules_to_save=to_save, use_rslora=bool(cfg.get("use_rslora")),
               rank_pattern=cfg.get("rank_pattern"), alpha_pattern=cfg.get("alpha_pattern"),
               use_dora=bool(cfg.get("use_dora")),
               layers_to_transform=cfg.get("layers_to_transform"),
               layers_pattern=cfg.get("layers_pattern"),
               exclude_modules=cfg.get("exclude_modules"))
    values = _per_expert_adapters(values, model)
    buffers = dict(model.named_buffers()) if whole else {}
    for name, value in take_router_biases(whole).items():  # a router in modules_to_save
        if name not in buffers or buffers[name].shape != value.shape:
            raise ValueError(f"{weights}: {name} {value.shape} does not fit the model")
        buffers[name]._data[...] = buffers[name].xp.asarray(value).astype(buffers[name].dtype)
    values.update(whole)
    own = {n: p for n, p in model.named_parameters() if p.requires_grad}  # what it trains
    missing = sorted(set(own) - set(values))
    extra = sorted(set(values) - set(own))
    if missing or extra:
        raise ValueError(f"{weights}: does not fit the adapted model: "
                         + "; ".join(x for x in (
                             f"missing {len(missing)}: {', '.join(missing[:4])}" if missing
                             else "", f"unexpected {len(extra)}: {', '.join(extra[:4])}"
                             if extra else "") if x))
    for n, p in own.items():
        if values[n].shape != tuple(p.shape):
            raise ValueError(f"{weights}: {n} is {values[n].shape}, the model's {tuple(p.shape)}")
        p._data[...] = p.xp.asarray(values[n]).astype(p.dtype)
    model.lora_config["base_model_name_or_path"] = cfg.get("base_model_name_or_path")
    if (folder / "tokenizer.json").is_file() or (folder / "tokenizer.model").is_file():
        from .tokenizer import load_tokenizer  # the tokenizer saved with the adapter (the

        model.tokenizer = load_tokenizer(folder)  # tokens it added)
    # the adapter in the model's mode (from_pretrained: evaluation, as PeftModel.
    # from_pretrained gives it: lora_dropout off until model.train())
    return model.train(model.training)


def _load_embeddings(model, values: dict) -> None:
    """Take the embedding and head tables out of ``values`` (peft's names) into ``model``,
    resizing it to their size first; the tied head's copies are dropped."""
    emb = values.pop("model.embed_tokens.token_adapter.base_layer.weight",
                     values.pop("model.embed_tokens.weight", None))
    head = values.pop("lm_head.weight", values.pop("lm_head.token_adapter.base_layer.weight",
                                                   None))
    values.pop("lm_head.token_adapter.trainable_tokens_delta", None)
    if emb is None:
        return
    if emb.shape[0] != model.config.vocab_size:
        model.resize_token_embeddings(emb.shape[0])
    w = model.model.embed_tokens.weight
    w._data[...] = w.xp.asarray(emb).astype(w.dtype)
    if head is not None and not model.config.tie_word_embeddings:
        w = model.lm_head.weight
        w._data[...] = w.xp.asarray(head).astype(w.dtype)


def _peft_parameter(name) -> str:
    """skiff's target of one of peft's ``target_parameters``: ``experts.gate_up_proj`` as
    given, or bare (``gate_up_proj``, ``down_proj``: peft's ``all-linear`` on transformers'
    MoE names the parameters so: only the experts hold parameters of those names)."""
    name = str(name).removeprefix("mlp.")
    return "experts." + name if name in ("gate_up_proj", "down_proj") else name


def _per_expert_adapters(values: dict, model) -> dict:
    """peft's fused expert adapters (``...mlp.experts[.base_layer].lora_A.weight`` (r E, in),
    ``lora_B`` (out, r E)) cut into skiff's per-expert ``gate_up_lora`` / ``down_proj``
    adapters (the inverse of :func:`_fused_expert_adapters`)."""
    out = {}
    hidden = model.config.hidden_size
    for name, arr in values.items():
        hit = re.match(r"(.*\.mlp\.experts)(\.base_layer)?\.lora_([AB])\.weight$", name)
        if not hit:
            out[name] = arr
            continue
        prefix, _, which = hit.groups()
        a = values[f"{prefix}{hit.group(2) or ''}.lora_A.weight"]
        b = values[f"{prefix}{hit.group(2) or ''}.lora_B.weight"]
        E = model.config.moe_num_experts
        r = a.shape[0] // E
        gate_up = a.shape[1] == hidden and b.shape[0] == 2 * model.config.moe_intermediate_size
        part = "gate_up_lora" if gate_up else "down_proj"
        for e in range(E):
            key = f"{prefix}.{e}.{part}.lora_{which}.weight"
            out[key] = a.reshape(E, r, -1)[e] if which == "A" \
                else b.reshape(b.shape[0], r, E)[:, :, e]
    return out

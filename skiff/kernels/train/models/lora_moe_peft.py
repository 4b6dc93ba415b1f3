"""What peft makes of a LoRA adapter on an MoE ERNIE-4.5's MLP projections (round 42, h12).

peft (0.21, with transformers 5) rewrites an adapter's ``target_modules`` before it loads one
on an MoE model whose experts transformers fuses: ``gate_proj`` / ``up_proj`` / ``down_proj``
(the bare names, and any name ending with them) become the routed experts' fused weights
(``target_parameters`` ``gate_up_proj`` at twice the rank, ``down_proj``) and leave the
linear layers. skiff adapts the linear layers of those names (the shared experts', a dense
layer's MLP), so peft loads such an adapter with those tensors dropped ("missing adapter
keys" for the experts, the base's MLP run): its logits are not the fine-tune's. The saved
adapter says so when it is written (:func:`peft_misreads`); the merged model (``hf-model``)
is the fine-tune in transformers.

A job's ``--lora-targets`` (round 43, h13) reads those names as peft does instead
(:func:`peft_job_targets`): ``q_proj,gate_proj,up_proj,down_proj`` on an MoE ERNIE-4.5 is the
attention and the routed experts, gate+up fused at rank 2r (alpha 2a), down at rank r, and no
LoRA on the shared experts or a dense layer's MLP, so the job's ``hf-adapter`` is what
``PeftModel.from_pretrained`` loads and the fine-tune a peft user asked for."""

from __future__ import annotations

import re
import warnings

from ..core import nn

__all__ = ["peft_job_targets", "peft_misreads", "warn_peft_misreads"]

_REMAPPED = re.compile(r"(^|\.)(gate_proj|up_proj|down_proj)$")


def peft_misreads(model, names) -> list[str]:
    """The adapted linear layers (``names``) of an MoE ``model`` that peft, on transformers 5,
    reads as the routed experts' fused weights (not the experts' own slices: skiff saves
    those as peft's ``target_parameters``)."""
    if not getattr(getattr(model, "config", None), "is_moe", False):
        return []
    return [n for n in names if _REMAPPED.search(n) and not re.search(r"\.experts\.\d+\.", n)]


def warn_peft_misreads(model, names, folder) -> None:
    bad = peft_misreads(model, names)
    if not bad:
        return
    parts = sorted({n.rsplit(".", 1)[-1] for n in bad})
    where = sorted({"shared experts" if ".shared_experts." in n else "dense MLP" for n in bad})
    warnings.warn(
        f"{folder}: peft (with transformers 5) reads LoRA targets {', '.join(parts)} of an "
        f"MoE ERNIE-4.5 as its routed experts' fused weights, so this adapter's LoRA on the "
        f"{' and '.join(where)} ({len(bad)} layers, e.g. {bad[0]}) does not load there: "
        "PeftModel.from_pretrained gives the base's MLP, not this fine-tune. In transformers "
        "use the merged model (a train job's hf-model); for an adapter peft reads the same, "
        "adapt the attention and the experts (experts.gate_up_proj, experts.down_proj)",
        UserWarning, stacklevel=3)


def peft_job_targets(model, targets, r, alpha):
    """``(targets, rank_pattern, alpha_pattern)``: a job's ``--lora-targets`` list as peft
    (0.21, transformers 5) reads it on ``model`` (``_convert_peft_config_moe``): on an MoE
    ERNIE-4.5, each name equal to or ending in ``gate_proj`` / ``up_proj`` becomes the routed
    experts' fused ``experts.gate_up_proj`` at rank ``2 r`` and alpha ``2 alpha`` (both or
    neither, as peft: they are one weight there), ``down_proj`` the experts' ``down_proj``;
    the other names stay; ``gate`` (or a name ending in ``.gate``) is the router's weight
    (``gate.weight``, a LoRA pair of rank ``r``). ``all-linear`` (a string, or the one name
    in a list; round 44) is every linear layer's name (no ``lm_head``) plus ``gate`` /
    ``gate_proj`` / ``up_proj`` / ``down_proj``, as peft resolves it
    (``_resolve_string_target_modules``): the attention, the routed experts and the router,
    no shared-expert or dense-MLP LoRA. Dense models, other strings (regular expressions:
    skiff's reading) and lists without those names come back as given (patterns ``None``)."""
    if not getattr(getattr(model, "config", None), "is_moe", False):
        return targets, None, None
    if not any(".experts." in f".{n}." for n, _ in model.named_modules()):
        return targets, None, None
    if not isinstance(targets, str) and list(targets) == ["all-linear"]:
        targets = "all-linear"
    if targets == "all-linear":
        targets = sorted({n.rpartition(".")[2] for n, m in model.named_modules()
                          if isinstance(m, nn.Linear) and n != "lm_head"}
                         | {"gate", "gate_proj", "up_proj", "down_proj"})
    elif isinstance(targets, str):
        return targets, None, None
    hits = {t: _REMAPPED.search(t).group(2) for t in targets if _REMAPPED.search(t)}
    router = [t for t in targets if t == "gate" or t.endswith(".gate")]
    if not hits and not router:
        return targets, None, None
    parts = set(hits.values())
    fused = parts & {"gate_proj", "up_proj"}
    if len(fused) == 1:
        have, miss = sorted(fused)[0], sorted({"gate_proj", "up_proj"} - fused)[0]
        raise ValueError(f"LoRA target {have} on an MoE ERNIE-4.5 without {miss}: peft reads "
                         f"them as the routed experts' one fused gate_up_proj (and refuses "
                         f"one alone), so give both ({have},{miss}), or neither")
    out = [t for t in targets if t not in hits and t not in router]
    if router:
        out.append("gate.weight")
    rank = alpha_p = None
    if fused:
        out.append("experts.gate_up_proj")
        rank, alpha_p = {r".*\.gate_up_proj": 2 * int(r)}, {r".*\.gate_up_proj": 2 * alpha}
    if "down_proj" in parts:
        out.append("experts.down_proj")
    return list(dict.fromkeys(out)), rank, alpha_p

"""What peft makes of a LoRA adapter on an MoE ERNIE-4.5's MLP projections (round 42, h12).

peft (0.21, with transformers 5) rewrites an adapter's ``target_modules`` before it loads one
on an MoE model whose experts transformers fuses: ``gate_proj`` / ``up_proj`` / ``down_proj``
(the bare names, and any name ending with them) become the routed experts' fused weights
(``target_parameters`` ``gate_up_proj`` at twice the rank, ``down_proj``) and leave the
linear layers. skiff adapts the linear layers of those names (the shared experts', a dense
layer's MLP), so peft loads such an adapter with those tensors dropped ("missing adapter
keys" for the experts, the base's MLP run): its logits are not the fine-tune's. The saved
adapter says so when it is written (:func:`peft_misreads`); the merged model (``hf-model``)
is the fine-tune in transformers."""

from __future__ import annotations

import re
import warnings

__all__ = ["peft_misreads", "warn_peft_misreads"]

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

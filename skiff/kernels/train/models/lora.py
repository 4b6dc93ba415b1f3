"""LoRA: low-rank adapters on a model's linear layers, trained while the base stays frozen.

``apply_lora(model, r=8, alpha=16, target_modules=("q_proj", "v_proj"))`` replaces every
``nn.Linear`` whose attribute name is in ``target_modules`` by a :class:`LoRALinear`:
``y = x W^T + b + (alpha / r) * (x A^T) B^T`` with ``A`` (r, in) drawn as peft draws it
(Kaiming-uniform, ``a = sqrt(5)``) and ``B`` (out, r) zero, so the model starts unchanged.
The base weight keeps its name (``...q_proj.weight``); the adapter is ``...q_proj.lora_A`` /
``lora_B``, peft's names. Every other parameter is frozen (``requires_grad = False``).
Experts of an MoE layer and its router are left alone (transformers keeps experts fused, so
peft does not adapt them either).

``save_adapter(model, DIR)`` writes peft's layout (``adapter_config.json``,
``adapter_model.safetensors``) so ``peft.PeftModel.from_pretrained(base, DIR)`` loads it;
``merge_lora(model)`` folds the adapters into the base weights (``W + scale * B A``) and
puts plain Linear layers back, for a merged checkpoint.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from ..core import nn
from ..core.nn import functional as F
from ..core.nn.layers import uniform_
from . import safetensors_io as st

__all__ = ["LoRALinear", "apply_lora", "merge_lora", "merged_state_dict", "save_adapter",
           "lora_modules"]


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update."""

    def __init__(self, base: nn.Linear, r: int, alpha: float, dropout: float = 0.0):
        super().__init__()
        self.in_features, self.out_features = base.in_features, base.out_features
        self.weight = base.weight
        self.bias = base.bias
        self.r, self.alpha = int(r), float(alpha)
        self.scaling = self.alpha / self.r
        dtype = base.weight.dtype
        self.lora_A = nn.Linear(self.in_features, self.r, bias=False, dtype=dtype)
        bound = 1.0 / math.sqrt(self.in_features)  # kaiming_uniform(a=sqrt(5)), as peft
        self.lora_A.weight.data[...] = uniform_((self.r, self.in_features), bound, dtype=dtype)
        self.lora_B = nn.Linear(self.r, self.out_features, bias=False, dtype=dtype)
        self.lora_B.weight.data[...] = 0
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        h = self.dropout(x) if self.dropout is not None else x
        return y + self.lora_B(self.lora_A(h)) * self.scaling

    def delta(self) -> np.ndarray:
        """``scale * B A`` (out, in) as a host array."""
        return (self.lora_B.weight.numpy() @ self.lora_A.weight.numpy()) * self.scaling

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, r={self.r}, alpha={self.alpha}"


def _targets(model, target_modules):
    """(parent, attribute, dotted name, Linear) of every adaptable Linear named in targets."""
    out = []
    for name, module in model.named_modules():
        for attr, child in list(module._modules.items()):
            full = f"{name}.{attr}" if name else attr
            if (attr in target_modules and isinstance(child, nn.Linear)
                    and ".experts." not in f".{full}." and not full.endswith("mlp.gate")):
                out.append((module, attr, full, child))
    return out


def apply_lora(model, r: int = 8, alpha: float = 16, target_modules=("q_proj", "v_proj"),
               dropout: float = 0.0):
    """Adapt ``model`` in place (see the module docstring); returns it. An unknown target
    name (no Linear by that name) is one clear error."""
    if not isinstance(r, (int, np.integer)) or r < 1:
        raise ValueError(f"LoRA rank r must be a positive integer, got {r!r}")
    targets = _targets(model, set(target_modules))
    found = {attr for _, attr, _, _ in targets}
    missing = sorted(set(target_modules) - found)
    if missing:
        raise ValueError(f"LoRA target_modules {missing} name no linear layer of this model")
    for p in model.parameters():
        p.requires_grad = False
        p.grad = None
    for parent, attr, _, linear in targets:
        setattr(parent, attr, LoRALinear(linear, r, alpha, dropout))
    model.lora_config = {"r": int(r), "lora_alpha": float(alpha), "lora_dropout": float(dropout),
                         "target_modules": sorted(found)}
    return model


def lora_modules(model) -> list[tuple[str, LoRALinear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]


def merged_state_dict(model) -> dict[str, np.ndarray]:
    """The model's weights with every adapter folded in, under the base names only."""
    state = model.state_dict()
    for name, m in lora_modules(model):
        state[f"{name}.weight"] = (state[f"{name}.weight"] + m.delta()).astype(
            state[f"{name}.weight"].dtype)
        for k in ("lora_A.weight", "lora_B.weight"):
            state.pop(f"{name}.{k}")
    return state


def merge_lora(model):
    """Fold the adapters into the base weights and put plain Linear layers back (all
    parameters trainable again); returns the model."""
    modules = dict(model.named_modules())
    for name, m in lora_modules(model):
        parent = modules[name.rpartition(".")[0]] if "." in name else model
        lin = nn.Linear(m.in_features, m.out_features, bias=m.bias is not None,
                        dtype=m.weight.dtype)
        lin.weight, lin.bias = m.weight, m.bias
        lin.weight.data += lin.weight.xp.asarray(m.delta()).astype(lin.weight.dtype)
        setattr(parent, name.rpartition(".")[2], lin)
    for p in model.parameters():
        p.requires_grad = True
    model.__dict__.pop("lora_config", None)
    return model


def save_adapter(model, path: str | os.PathLike, base_model_name_or_path: str | None = None
                 ) -> list[str]:
    """Write the adapters in peft's layout (``adapter_config.json``,
    ``adapter_model.safetensors``); ``peft.PeftModel.from_pretrained(base, path)`` loads them."""
    mods = lora_modules(model)
    if not mods:
        raise ValueError("the model has no LoRA adapters (apply_lora first)")
    folder = Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name, m in mods:
        tensors[f"base_model.model.{name}.lora_A.weight"] = m.lora_A.weight.numpy()
        tensors[f"base_model.model.{name}.lora_B.weight"] = m.lora_B.weight.numpy()
    st.write_file(tensors, folder / "adapter_model.safetensors")
    cfg = dict(model.lora_config)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": cfg["r"],
              "lora_alpha": cfg["lora_alpha"], "lora_dropout": cfg["lora_dropout"],
              "target_modules": cfg["target_modules"], "bias": "none",
              "fan_in_fan_out": False, "use_rslora": False, "inference_mode": True,
              "base_model_name_or_path": base_model_name_or_path
              or getattr(model, "source_folder", None)}
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return ["adapter_model.safetensors", "adapter_config.json"]

"""Tensor parallelism for ERNIE-4.5 (:mod:`skiff.kernels.train.models.ernie`), LoRA included.

The same Megatron split as :mod:`.tensor_parallel` does for a GPT, on ERNIE's layers:

* attention: each rank keeps ``H / tp`` query heads (rows of ``q_proj``, columns of
  ``o_proj``) and the key/value heads they read. With grouped-query attention and
  ``K >= tp`` the ``K`` k/v heads are split too (``tp`` must divide ``K``); with ``K < tp``
  (``tp`` a multiple of ``K``) each rank keeps the one k/v head its query heads share, held
  whole by ``tp / K`` ranks, whose gradients are summed over them (:class:`SharedRows`);
* SwiGLU: ``gate_proj`` and ``up_proj`` by output rows, ``down_proj`` by input columns, in
  every dense MLP, every expert and the shared experts (the router, the norms, the embedding
  and the head stay whole on every rank: tokens route the same everywhere);
* LoRA: a column layer's ``lora_A`` is whole (its gradient summed over the group) and its
  ``lora_B`` split like the base rows; a row layer's ``lora_A`` is split like the base
  columns and its ``lora_B`` whole; an expert's fused gate/up adapter splits ``lora_B``'s gate
  rows and up rows alike.

Every split parameter keeps its single-device name; :func:`parallelize_ernie` returns the
``{name: (full shape, axis, index)}`` table that :func:`gather_full` and the sharded
checkpoints use, and how many ranks hold each parameter (for the gradient norm).
"""

from __future__ import annotations

import numpy as np

from skiff.kernels.train.core.autograd import Function, xp_of
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.nn.module import Module, Parameter
from skiff.kernels.train.core.tensor import split

from .comm import Comm
from .tensor_parallel import CopyToGroup, ReduceFromGroup

__all__ = ["SharedRows", "ErnieTPLinear", "ErnieTPGateUp", "parallelize_ernie", "gather_full",
           "is_ernie"]


def is_ernie(model) -> bool:
    """Whether ``model`` is an ERNIE-4.5 model (split by this module, not as a GPT)."""
    from skiff.kernels.train.models.ernie import ErnieForCausalLM

    return isinstance(model, ErnieForCausalLM)


class SharedRows(Function):
    """Forward identity on a parameter's rows ``rows`` (of ``full`` rows) that several ranks
    hold; backward: the gradient summed over the ranks holding the same rows."""

    def forward(self, w, comm=None, rows=None, full=0):
        self.comm, self.rows, self.full = comm, rows, full
        return w

    def backward(self, g):
        xp = xp_of(g)
        buf = xp.zeros((self.full,) + tuple(g.shape[1:]), dtype=g.dtype)
        buf[xp.asarray(self.rows)] = g
        return self.comm.allreduce(buf)[xp.asarray(self.rows)]


class _Weight(Module):
    """A bare weight, so that an adapter keeps its name ``lora_A.weight``."""

    def __init__(self, w):
        super().__init__()
        self.weight = Parameter(w)


def _copy(a):
    return xp_of(a).ascontiguousarray(a).copy()


class ErnieTPLinear(Module):
    """A plain or LoRA linear layer cut over the tp group: ``"column"`` keeps the output rows
    ``index`` (``shared``: rows that other ranks hold too), ``"row"`` the input columns
    ``index`` and all-reduces the partial products."""

    def __init__(self, lin, comm: Comm, kind: str, index, shared: bool = False):
        super().__init__()
        if getattr(lin, "dropout", None) is not None:
            raise ValueError("tensor parallel LoRA takes no dropout: use strategy='dp' or "
                             "'zero2' for LoRA with dropout")
        self.comm, self.kind, self.shared = comm, kind, bool(shared)
        self.index = np.asarray(index, dtype=np.int64)
        w, b = lin.weight._data, None if lin.bias is None else lin.bias._data
        self.full_shape = tuple(w.shape)
        if kind == "column":
            self.weight = Parameter(_copy(w[self.index]), requires_grad=lin.weight.requires_grad)
            self.bias = None if b is None else Parameter(_copy(b[self.index]),
                                                         requires_grad=lin.bias.requires_grad)
        else:
            self.weight = Parameter(_copy(w[:, self.index]),
                                    requires_grad=lin.weight.requires_grad)
            self.bias = None if b is None else Parameter(_copy(b),
                                                         requires_grad=lin.bias.requires_grad)
        self.scaling = getattr(lin, "scaling", None)
        if hasattr(lin, "lora_A"):  # a LoRALinear
            a, bb = lin.lora_A.weight._data, lin.lora_B.weight._data
            if kind == "column":
                self.lora_A, self.lora_B = _Weight(_copy(a)), _Weight(_copy(bb[self.index]))
            else:
                self.lora_A, self.lora_B = _Weight(_copy(a[:, self.index])), _Weight(_copy(bb))
        else:
            self.lora_A = self.lora_B = None

    def _rows(self, w):
        if not self.shared:
            return w
        return SharedRows.apply(w, comm=self.comm, rows=self.index, full=self.full_shape[0])

    def forward(self, x):
        if self.kind == "column":
            x = CopyToGroup.apply(x, comm=self.comm)
            b = None if self.bias is None else self._rows(self.bias)
            y = F.linear(x, self._rows(self.weight), b)
            if self.lora_A is not None:  # lora_A whole: its gradient is every rank's part
                a = CopyToGroup.apply(self.lora_A.weight, comm=self.comm)
                y = y + F.linear(F.linear(x, a), self._rows(self.lora_B.weight)) * self.scaling
            return y
        y = ReduceFromGroup.apply(F.linear(x, self.weight, None), comm=self.comm)
        if self.lora_A is not None:
            z = ReduceFromGroup.apply(F.linear(x, self.lora_A.weight), comm=self.comm)
            y = y + F.linear(z, self.lora_B.weight) * self.scaling
        return y + self.bias if self.bias is not None else y

    def slicing(self) -> dict:
        """``{local name: (full shape, axis, index)}`` of the split parameters."""
        out_f, in_f = self.full_shape
        if self.kind == "column":
            out = {"weight": (self.full_shape, 0, self.index)}
            if self.bias is not None:
                out["bias"] = ((out_f,), 0, self.index)
            if self.lora_B is not None:
                out["lora_B.weight"] = ((out_f, self.lora_B.weight.shape[1]), 0, self.index)
            return out
        out = {"weight": (self.full_shape, 1, self.index)}
        if self.lora_A is not None:
            out["lora_A.weight"] = ((self.lora_A.weight.shape[0], in_f), 1, self.index)
        return out

    def extra_repr(self) -> str:
        return f"{self.kind}, {len(self.index)} of {self.full_shape}, shared={self.shared}"


class ErnieTPGateUp(Module):
    """An expert's fused gate/up LoRA (``lora.GateUpLoRA``) cut like its gate and up rows."""

    disabled = False  # as GateUpLoRA's (the expert reads it: peft's disable_adapter)

    def __init__(self, adapter, comm: Comm, rows):
        super().__init__()
        rows = np.asarray(rows, dtype=np.int64)
        self.comm, self.full_inner, self.scaling = comm, adapter.inner, adapter.scaling
        self.index = np.concatenate([rows, adapter.inner + rows])
        self.inner = len(rows)
        self.lora_A = _Weight(_copy(adapter.lora_A.weight._data))
        self.lora_B = _Weight(_copy(adapter.lora_B.weight._data[self.index]))

    def forward(self, x):
        x = CopyToGroup.apply(x, comm=self.comm)
        a = CopyToGroup.apply(self.lora_A.weight, comm=self.comm)
        d = F.linear(F.linear(x, a), self.lora_B.weight) * self.scaling
        return split(d, [self.inner, self.inner], axis=-1)

    def slicing(self) -> dict:
        r = self.lora_B.weight.shape[1]
        return {"lora_B.weight": ((2 * self.full_inner, r), 0, self.index)}


def _part(n: int, tp: int, rank: int) -> np.ndarray:
    k = n // tp
    return np.arange(rank * k, (rank + 1) * k)


def _heads(heads, d: int) -> np.ndarray:
    return (np.asarray(heads)[:, None] * d + np.arange(d)[None, :]).reshape(-1)


def _check(cfg, tp: int) -> None:
    h, k = cfg.num_attention_heads, cfg.num_key_value_heads
    if h % tp:
        raise ValueError(f"tp={tp} must divide the {h} attention heads of this ERNIE model: "
                         "use a tp that divides them, or strategy='dp', 'zero2' or 'pp'")
    if k % tp and tp % k:
        raise ValueError(f"tp={tp} must divide the {k} key/value heads or be a multiple of "
                         "them: use another tp, or strategy='dp', 'zero2' or 'pp'")
    widths = {"intermediate_size": cfg.intermediate_size}
    if cfg.is_moe:
        widths["moe_intermediate_size"] = cfg.moe_intermediate_size
    for name, n in widths.items():
        if n % tp:
            raise ValueError(f"tp={tp} must divide {name}={n}: use another tp, or "
                             "strategy='dp', 'zero2' or 'pp'")


def _mlps(mlp):
    experts = getattr(mlp, "experts", None)
    if experts is None:
        return [mlp]
    shared = [mlp.shared_experts] if mlp.shared_experts is not None else []
    return list(experts) + shared


def parallelize_ernie(model, comm: Comm) -> dict:
    """Cut ``model`` (an ``ErnieForCausalLM``, LoRA or not) over the tp group ``comm`` in
    place; returns ``{"slicing": {name: (full shape, axis, index)}, "copies": {name: ranks
    holding it}}`` over the trainable and frozen parameters alike."""
    cfg, tp, r = model.config, comm.size, comm.rank
    _check(cfg, tp)
    H, K, D = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    hl = H // tp
    q_rows = _heads(np.arange(r * hl, (r + 1) * hl), D)
    if K % tp == 0:
        kl, kv_heads, shared = K // tp, np.arange(r * (K // tp), (r + 1) * (K // tp)), False
    else:  # fewer k/v heads than ranks: the one this rank's query heads read, held whole
        kl, kv_heads, shared = 1, np.array([r * K // tp]), True
    kv_rows = _heads(kv_heads, D)
    for layer in model.model.layers:
        attn = layer.self_attn
        attn.q_proj = ErnieTPLinear(attn.q_proj, comm, "column", q_rows)
        attn.k_proj = ErnieTPLinear(attn.k_proj, comm, "column", kv_rows, shared)
        attn.v_proj = ErnieTPLinear(attn.v_proj, comm, "column", kv_rows, shared)
        attn.o_proj = ErnieTPLinear(attn.o_proj, comm, "row", q_rows)
        attn.H, attn.K = hl, kl
        for mlp in _mlps(layer.mlp):
            rows = _part(mlp.gate_proj.weight.shape[0], tp, r)
            mlp.gate_proj = ErnieTPLinear(mlp.gate_proj, comm, "column", rows)
            mlp.up_proj = ErnieTPLinear(mlp.up_proj, comm, "column", rows)
            mlp.down_proj = ErnieTPLinear(mlp.down_proj, comm, "row", rows)
            if mlp.gate_up_lora is not None:
                mlp.gate_up_lora = ErnieTPGateUp(mlp.gate_up_lora, comm, rows)
    slicing, copies = {}, {}
    for mname, mod in model.named_modules():
        if isinstance(mod, (ErnieTPLinear, ErnieTPGateUp)):
            for local, entry in mod.slicing().items():
                slicing[f"{mname}.{local}"] = entry
                copies[f"{mname}.{local}"] = tp // K if getattr(mod, "shared", False) else 1
    for name, _ in model.named_parameters():
        copies.setdefault(name, tp)
    model.tp_comm = comm
    model.tp_slicing = slicing
    # rows several ranks hold are written to a checkpoint by the first of them only
    model.tp_not_written = {n for n, c in copies.items() if c > 1 and n in slicing
                            and r % c} if shared else set()
    return {"slicing": slicing, "copies": copies}


def gather_full(model, comm: Comm) -> dict:
    """The single-device state dict of an ERNIE model cut by :func:`parallelize_ernie`
    (a collective over the tp group; every rank gets it)."""
    state = model.state_dict()
    slicing = model.tp_slicing
    mine = {n: (np.asarray(idx), state[n]) for n, (_, _, idx) in slicing.items()}
    every = comm.allgather_object(mine)
    for name, (shape, axis, _) in slicing.items():
        full = np.zeros(shape, dtype=state[name].dtype)
        for part in every:
            idx, arr = part[name]
            if axis == 0:
                full[idx] = arr
            else:
                full[:, idx] = arr
        state[name] = full
    return state


def whole_model(model, weights: dict):
    """A single-device ERNIE model holding ``weights`` (the gathered state of a model that a
    strategy split), with the same LoRA adapters and the attributes the checkpoint gave
    (source folder, tokenizer, generation config): what the job saves in the Hugging Face
    layout, merged and as an adapter."""
    from skiff.kernels.train.core import nn
    from skiff.kernels.train.models.ernie import ErnieForCausalLM
    from skiff.kernels.train.models.lora import apply_lora_config

    with nn.skip_init():
        whole = ErnieForCausalLM(model.config, dtype=model.model.embed_tokens.weight.dtype)
    lora = getattr(model, "lora_config", None)
    if lora:  # every option (rsLoRA, DoRA, patterns, modules_to_save, trainable tokens)
        apply_lora_config(whole, lora)
    whole.load_state_dict(weights)
    for key, value in vars(model).items():  # plain attributes the loader set
        if not key.startswith("_") and key not in vars(whole) and key not in (
                "tp_comm", "tp_slicing", "tp_not_written", "ep_comm",
                "load_balancing_loss"):
            setattr(whole, key, value)
    whole.generation_config = dict(model.generation_config)
    return whole

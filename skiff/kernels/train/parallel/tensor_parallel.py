"""Tensor parallelism (Megatron-style): layers whose weights are split across a tp group.

Two autograd ops carry the communication (Shoeybi et al. 2019, "f" and "g"):

* :class:`CopyToGroup` -- forward identity, backward all-reduce: where a replicated
  activation enters a split layer, its gradient is the sum of every rank's part.
* :class:`ReduceFromGroup` -- forward all-reduce, backward identity: where the partial
  outputs of a split layer become a replicated activation again.

With them, an MLP is a :class:`ColumnParallelLinear` (output features split) followed by a
:class:`RowParallelLinear` (input features split), one all-reduce forward and one backward;
attention splits its heads (:class:`ParallelAttention`); the vocabulary splits the embedding
(:class:`VocabParallelEmbedding`) and the output layer, whose logits never need gathering:
:func:`vocab_parallel_cross_entropy` reduces the max, the softmax sum and the target logit.

Every layer is made from the single-device layer it replaces (``from_...``), keeping this
rank's slice of the same weights, so a tensor-parallel model starts exactly where its
single-device twin does; :meth:`full_weights` gathers the slices back.
"""

from __future__ import annotations

import types

import numpy as np

from skiff.kernels.train.core.autograd import Function, xp_of
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.nn.module import Module, Parameter
from skiff.kernels.train.core.ops_shape import scatter_add
from skiff.kernels.train.core.tensor import Tensor

from .comm import Comm

__all__ = ["CopyToGroup", "ReduceFromGroup", "ColumnParallelLinear", "RowParallelLinear",
           "ParallelAttention", "VocabParallelEmbedding", "vocab_parallel_cross_entropy",
           "parallelize_gpt", "gather_full_state", "shard_from_full"]


class CopyToGroup(Function):
    def forward(self, x, comm=None):
        self.comm = comm
        return x

    def backward(self, g):
        return self.comm.allreduce(xp_of(g).ascontiguousarray(g))


class ReduceFromGroup(Function):
    def forward(self, x, comm=None):
        return comm.allreduce(xp_of(x).ascontiguousarray(x))

    def backward(self, g):
        return g


def _part(n: int, parts: int, index: int, what: str) -> slice:
    if n % parts:
        raise ValueError(f"{what} ({n}) must divide evenly over tp={parts}")
    k = n // parts
    return slice(index * k, (index + 1) * k)


class ColumnParallelLinear(Module):
    """``y_r = x @ W_r.T + b_r``: this rank's slice of the output features."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray | None, comm: Comm, full_out: int):
        super().__init__()
        self.comm = comm
        self.full_out = full_out
        self.weight = Parameter(weight)
        self.bias = Parameter(bias) if bias is not None else None

    @classmethod
    def from_linear(cls, lin, comm: Comm, rows: np.ndarray | None = None):
        """This rank's rows of ``lin`` (or of the row order ``rows``, e.g. heads of q, k, v)."""
        w, b = lin.weight._data, None if lin.bias is None else lin.bias._data
        if rows is None:
            rows = np.arange(w.shape[0])[_part(w.shape[0], comm.size, comm.rank,
                                               "output features")]
        out = cls(w[rows].copy(), None if b is None else b[rows].copy(), comm, w.shape[0])
        out.rows = np.asarray(rows)
        return out

    def forward(self, x):
        x = CopyToGroup.apply(x, comm=self.comm)
        return F.linear(x, self.weight, self.bias)


class RowParallelLinear(Module):
    """``y = sum_r x_r @ W_r.T + b``: this rank's slice of the input features; the partial
    products are all-reduced, then the (replicated) bias is added once."""

    def __init__(self, weight: np.ndarray, bias: np.ndarray | None, comm: Comm):
        super().__init__()
        self.comm = comm
        self.weight = Parameter(weight)
        self.bias = Parameter(bias) if bias is not None else None

    @classmethod
    def from_linear(cls, lin, comm: Comm, cols: np.ndarray | None = None):
        w, b = lin.weight._data, None if lin.bias is None else lin.bias._data
        if cols is None:
            cols = np.arange(w.shape[1])[_part(w.shape[1], comm.size, comm.rank,
                                               "input features")]
        out = cls(w[:, cols].copy(), None if b is None else b.copy(), comm)
        out.cols = np.asarray(cols)
        return out

    def forward(self, x):
        y = ReduceFromGroup.apply(F.linear(x, self.weight, None), comm=self.comm)
        return y + self.bias if self.bias is not None else y


class ParallelAttention(Module):
    """Causal self-attention with this rank's ``n_heads / tp`` heads (q, k, v and the
    matching input columns of the output projection)."""

    def __init__(self, attn, comm: Comm):
        super().__init__()
        d, h = attn.d_model, attn.n_heads
        if h % comm.size:
            raise ValueError(f"tp={comm.size} must divide the {h} attention heads")
        hd = d // h
        local = h // comm.size
        heads = np.arange(comm.rank * local, (comm.rank + 1) * local)
        cols = (heads[:, None] * hd + np.arange(hd)[None, :]).reshape(-1)  # within q|k|v
        rows = np.concatenate([cols, d + cols, 2 * d + cols])
        self.comm = comm
        self.d_model, self.n_heads, self.local_heads = d, h, local
        self.c_attn = ColumnParallelLinear.from_linear(attn.c_attn, comm, rows=rows)
        self.c_proj = RowParallelLinear.from_linear(attn.c_proj, comm, cols=cols)

    def forward(self, x):
        b, t, _ = x.shape
        h, hd = self.local_heads, self.d_model // self.n_heads
        qkv = self.c_attn(x).reshape(b, t, 3, h, hd).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], causal=True)
        return self.c_proj(y.permute(0, 2, 1, 3).reshape(b, t, h * hd))


class _LocalLookup(Function):
    """Rows of this rank's vocabulary slice; ids outside it give zeros (and no gradient)."""

    def forward(self, w, idx, lo=0):
        xp = xp_of(w)
        local = xp.asarray(idx) - lo  # ids may come from the host
        mask = (local >= 0) & (local < w.shape[0])
        local = xp.where(mask, local, 0)
        self.wshape = w.shape
        self.save_for_backward(local, mask)
        return w[local] * mask[..., None].astype(w.dtype)

    def backward(self, g):
        local, mask = self.saved
        gw = xp_of(g).zeros(self.wshape, dtype=g.dtype)
        scatter_add(gw, local[mask], g[mask])
        return gw, None


class VocabParallelEmbedding(Module):
    """An embedding whose rows (the vocabulary) are split over the tp group."""

    def __init__(self, emb, comm: Comm):
        super().__init__()
        n = emb.weight.shape[0]
        part = _part(n, comm.size, comm.rank, "vocabulary")
        self.comm, self.lo, self.full_rows = comm, part.start, n
        self.weight = Parameter(emb.weight._data[part].copy())

    def forward(self, idx):
        i = idx._data if isinstance(idx, Tensor) else idx  # (a cupy array's .data is a pointer)
        out = _LocalLookup.apply(self.weight, i, lo=self.lo)
        return ReduceFromGroup.apply(out, comm=self.comm)


class _VocabParallelCE(Function):
    def forward(self, logits, target, comm=None, lo=0, ignore_index=-100):
        xp = xp_of(logits)
        target = xp.asarray(target)
        n, v = logits.shape
        lmax = logits.max(axis=1)
        gmax = comm.allreduce(xp.ascontiguousarray(lmax), "max")
        shifted = logits - gmax[:, None]
        e = xp.exp(shifted)
        total = comm.allreduce(xp.ascontiguousarray(e.sum(axis=1)))
        local = target - lo
        valid = target != ignore_index
        mine = (local >= 0) & (local < v) & valid
        picked = xp.zeros(n, dtype=logits.dtype)
        rows = xp.nonzero(mine)[0]
        picked[rows] = shifted[rows, local[rows]]
        picked = comm.allreduce(picked)
        count = max(int(valid.sum()), 1)
        loss = ((xp.log(total) - picked) * valid).sum() / count
        self.save_for_backward(e / total[:, None], rows, local, valid)
        self.count = count
        return xp.asarray(loss, dtype=logits.dtype)

    def backward(self, g):
        soft, rows, local, valid = self.saved
        grad = soft.copy()
        grad[rows, local[rows]] -= 1.0
        grad *= (valid[:, None] * (g / self.count)).astype(grad.dtype)
        return grad, None


def vocab_parallel_cross_entropy(logits_part, target, comm: Comm, lo: int,
                                 ignore_index: int = -100):
    """Mean cross-entropy of logits split by vocabulary (``(N, V/tp)``, this rank's columns
    start at ``lo``) against full-vocabulary targets ``(N,)``; equal on every tp rank."""
    t = target._data if isinstance(target, Tensor) else target
    t = t if hasattr(t, "reshape") else np.asarray(t)
    return _VocabParallelCE.apply(logits_part, t.reshape(-1), comm=comm, lo=lo,
                                  ignore_index=ignore_index)


# --- a whole GPT --------------------------------------------------------------------------------
def parallelize_gpt(model, comm: Comm):
    """Split a :class:`~skiff.kernels.train.models.gpt.GPT` over the tp group ``comm`` in place.

    Attention heads, MLP hidden units, the token embedding and the output layer's vocabulary
    are split; layer norms and position embeddings stay replicated. ``model.loss`` becomes the
    vocabulary-parallel cross-entropy. Returns the model.
    """
    if comm.size == 1:
        return model
    for block in model.h:
        block.attn = ParallelAttention(block.attn, comm)
        block.mlp.c_fc = ColumnParallelLinear.from_linear(block.mlp.c_fc, comm)
        block.mlp.c_proj = RowParallelLinear.from_linear(block.mlp.c_proj, comm)
    model.wte = VocabParallelEmbedding(model.wte, comm)
    head = ColumnParallelLinear.from_linear(model.lm_head, comm)
    model.lm_head = head
    lo = comm.rank * (head.full_out // comm.size)

    def loss(batch):
        x, y = batch
        logits = model(x)  # (B, T, V/tp)
        return vocab_parallel_cross_entropy(logits.reshape(-1, logits.shape[-1]), y, comm, lo)

    model.loss = loss
    model.tp_comm = comm
    model.parallel_dims = ("tp",)
    model.save = types.MethodType(_refuse_split_save, model)
    return model


def _refuse_split_save(model, path):
    """``save`` of a GPT split by tp: its ``state_dict`` holds this rank's part only (rank 0
    wrote 25 of 50 vocabulary rows, which one process then failed to load): say how to
    write the whole model instead."""
    comm = model.tp_comm
    raise ValueError(f"this GPT is split over tp={comm.size} ranks: its state_dict holds rank "
                     f"{comm.rank}'s part only. Gather it on every rank (a collective call): "
                     "weights = trainer.whole_state_dict(); then on rank 0 np.savez(path, "
                     "**weights), which a one-process GPT reads with load_state_dict(path)")


def gather_full_state(model) -> dict:
    """The single-device state dict of a tensor-parallel model (every tp rank gets it)."""
    state = {}
    split = {}
    for name, mod in model.named_modules():
        if isinstance(mod, ParallelAttention):
            split[name] = mod
    for name, value in model.state_dict().items():
        state[name] = value
    for name, mod in model.named_modules():
        prefix = f"{name}." if name else ""
        comm = getattr(mod, "comm", None)
        if isinstance(mod, ColumnParallelLinear) and not _inside(name, split):
            state[prefix + "weight"] = _cat(comm, mod.weight._data, 0)
            if mod.bias is not None:
                state[prefix + "bias"] = _cat(comm, mod.bias._data, 0)
        elif isinstance(mod, RowParallelLinear) and not _inside(name, split):
            state[prefix + "weight"] = _cat(comm, mod.weight._data, 1)
        elif isinstance(mod, VocabParallelEmbedding):
            state[prefix + "weight"] = _cat(comm, mod.weight._data, 0)
        elif isinstance(mod, ParallelAttention):
            d, h, p = mod.d_model, mod.n_heads, comm.size
            hd, local = d // h, h // p
            every = comm.allgather(_contig(mod.c_attn.weight._data))
            parts = every.reshape(p, 3, local * hd, d)
            w = parts.transpose(1, 0, 2, 3).reshape(3 * d, d)
            state[prefix + "c_attn.weight"] = w
            if mod.c_attn.bias is not None:
                bs = comm.allgather(_contig(mod.c_attn.bias._data))
                state[prefix + "c_attn.bias"] = bs.reshape(p, 3, local * hd).transpose(
                    1, 0, 2).reshape(3 * d)
            state[prefix + "c_proj.weight"] = _cat(comm, mod.c_proj.weight._data, 1)
            if mod.c_proj.bias is not None:
                state[prefix + "c_proj.bias"] = mod.c_proj.bias._data.copy()
    return state


def shard_from_full(model, full: dict) -> dict:
    """This rank's state dict of a tensor-parallel model, cut from a single-device state dict
    (the inverse of :func:`gather_full_state`; loading a checkpoint of another layout)."""
    state = {}
    for name in model.state_dict():
        if name not in full:
            raise KeyError(f"the full state lacks {name!r}")
        state[name] = full[name]
    for name, mod in model.named_modules():
        prefix = f"{name}." if name else ""
        if isinstance(mod, ColumnParallelLinear):
            state[prefix + "weight"] = full[prefix + "weight"][mod.rows].copy()
            if mod.bias is not None:
                state[prefix + "bias"] = full[prefix + "bias"][mod.rows].copy()
        elif isinstance(mod, RowParallelLinear):
            state[prefix + "weight"] = full[prefix + "weight"][:, mod.cols].copy()
        elif isinstance(mod, VocabParallelEmbedding):
            n = mod.weight.shape[0]
            state[prefix + "weight"] = full[prefix + "weight"][mod.lo:mod.lo + n].copy()
    return state


def _inside(name: str, parents: dict) -> bool:
    return any(name.startswith(p + ".") for p in parents)


def _contig(a):
    return xp_of(a).ascontiguousarray(a)


def _cat(comm: Comm, a: np.ndarray, axis: int) -> np.ndarray:
    every = comm.allgather(_contig(a))
    return xp_of(every).concatenate(list(every), axis=axis)

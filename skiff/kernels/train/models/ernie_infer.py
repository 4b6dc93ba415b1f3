"""ERNIE-4.5 inference without a graph: fused weights, plain float32 arrays, fused kernels.

What :class:`~.ernie.ErnieForCausalLM` runs when no gradient is wanted (``generate``,
``generate_batch``, ``model(ids)`` under ``no_grad``), on the host, in float32. The numbers
are those of the graph path (the same math in the same order, up to the rounding of a
GEMM that has more columns); what changes is the work:

* **fused weights**: each layer's ``q|k|v`` projections are one (H*D + 2*K*D, C) matrix and
  ``gate|up`` one (2*I, C) matrix, so a layer runs four GEMMs, not seven. The fused matrix
  *is* the storage: the parameters' ``.data`` become row views of it (made once, on the first
  inference call), so an optimizer step or any in-place edit of a weight is seen at once; a
  parameter whose ``.data`` is replaced (``load_state_dict``, a cast, a shard) is noticed by
  identity and its group fused again. A parameter that is a view of someone else's buffer
  (a ZeRO flat buffer) is never re-pointed: its group runs unfused.
* **each GEMM where it runs fastest** (:mod:`.ernie_kernels`): one row as a GEMV; 2..16
  rows (decode steps of a batch) by a numba kernel; 17..256 rows (a prompt) by
  onnxruntime's MLAS GEMM; more rows by OpenBLAS.
* **only the rows asked for**: with ``last_only`` the last layer's attention output,
  ``o_proj`` and MLP, the final norm and the head run for each sequence's last position only
  (every position's keys and values are still computed and cached): the logits asked for are
  the same.
* **fused elementwise kernels** (:mod:`.ernie_kernels`, each with a numpy reference twin
  compared in the tests): RMSNorm and the rotary embedding of q and k in place in the fused
  projection's output (numba), SwiGLU ``silu(gate) * up`` from the fused ``gate|up`` output
  (numpy in place).

:func:`fast_path` says whether a model can take it (plain ``nn.Linear`` projections, no
LoRA, float32 numpy weights) and returns its :class:`InferenceWeights`; MoE layers' experts
are called as modules inside the fast path.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..core import nn
from .ernie_kernels import (
    few_rows_matmul,
    mid_rows_matmul,
    rms_norm_rows,
    rotary_rows_,
    swiglu_rows,
)

__all__ = ["InferenceWeights", "fast_path", "prefill", "decode_step", "forward_fast",
           "forward_packed_fast", "forward_step_fast"]


# ---- fused weights ---------------------------------------------------------------------------
class _Group:
    """Parameters that multiply the same input (rows stacked): one fused matrix whose row
    blocks are the parameters' storage, or, when a parameter may not be re-pointed, the
    parameters as they are."""

    def __init__(self, params, old_base=None):
        self.params = [p for p in params]
        arrays = [p._data for p in self.params]
        ok = all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous
                 and (_owned(a) or (old_base is not None and a.base is old_base))
                 for a in arrays) and len({a.shape[1:] for a in arrays}) == 1
        if ok and len(arrays) > 1:
            fused = np.concatenate(arrays, axis=0)
            views, start = [], 0
            for p, a in zip(self.params, arrays):
                p._data = fused[start:start + a.shape[0]]
                views.append(p._data)
                start += a.shape[0]
            self.fused, self.views = fused, views
        else:
            self.fused, self.views = None, arrays

    def current(self) -> bool:
        return all(p._data is v for p, v in zip(self.params, self.views))

    def refreshed(self) -> _Group:
        return self if self.current() else _Group(self.params, self.fused)

    def parts(self) -> list:
        """The matrices to multiply by: the fused one, or each parameter's."""
        return [self.fused] if self.fused is not None else list(self.views)


def _owned(a) -> bool:
    """Whether array ``a`` is the whole of its memory: it owns it, wraps a plain buffer, or
    reshapes a whole array (what a checkpoint reader returns); not a slice of a larger
    buffer (a ZeRO flat buffer), whose owner would stop seeing the parameter once it is
    pointed elsewhere."""
    return (a.flags.owndata or not isinstance(a.base, np.ndarray)
            or a.base.size == a.size)


class _Layer:
    def __init__(self, layer):
        a = layer.self_attn
        self.H, self.K, self.D = a.H, a.K, a.D
        self.ln1, self.ln2 = layer.input_layernorm, layer.post_attention_layernorm
        self.eps1, self.eps2 = float(self.ln1.eps), float(self.ln2.eps)
        projs = (a.q_proj, a.k_proj, a.v_proj)
        self.qkv = _Group([p.weight for p in projs])
        self.qkv_b = _Group([p.bias for p in projs]) if a.q_proj.bias is not None else None
        self.o, self.o_b = a.o_proj.weight, a.o_proj.bias
        mlp = layer.mlp
        self.moe = None if _plain_mlp(mlp) else mlp
        if self.moe is None:
            self.gu = _Group([mlp.gate_proj.weight, mlp.up_proj.weight])
            self.gu_b = (_Group([mlp.gate_proj.bias, mlp.up_proj.bias])
                         if mlp.gate_proj.bias is not None else None)
            self.down, self.down_b = mlp.down_proj.weight, mlp.down_proj.bias

    def refresh(self) -> None:
        self.qkv = self.qkv.refreshed()
        if self.qkv_b is not None:
            self.qkv_b = self.qkv_b.refreshed()
        if self.moe is None:
            self.gu = self.gu.refreshed()
            if self.gu_b is not None:
                self.gu_b = self.gu_b.refreshed()


def _plain_mlp(mlp) -> bool:
    """A SwiGLU MLP of three plain ``nn.Linear`` (ernie.ErnieMLP without LoRA)."""
    return (getattr(mlp, "gate_up_lora", 1) is None
            and all(type(getattr(mlp, n, None)) is nn.Linear
                    for n in ("gate_proj", "up_proj", "down_proj")))


class InferenceWeights:
    """A model's weights as the fast path reads them (see the module docstring); made once
    per model by :func:`fast_path`, refreshed there when a parameter's storage changed."""

    def __init__(self, model):
        self.layers = [_Layer(layer) for layer in model.model.layers]

    def refresh(self) -> InferenceWeights:
        for layer in self.layers:
            layer.refresh()
        return self


def fast_path(model) -> InferenceWeights | None:
    """The model's :class:`InferenceWeights` when it can run the fast path now, else None:
    host float32 weights, plain ``nn.Linear`` attention projections and head (no LoRA);
    SKIFF_REFERENCE_OPS=1 turns it off (the graph path is the reference)."""
    import os

    if os.environ.get("SKIFF_REFERENCE_OPS"):
        return None
    if type(model.model.embed_tokens) is not nn.Embedding:  # trainable tokens: the graph
        return None
    emb = model.model.embed_tokens.weight._data
    if not isinstance(emb, np.ndarray) or emb.dtype != np.float32:
        return None
    if type(model.lm_head) is not nn.Linear or model.lm_head.weight._data.dtype != np.float32:
        return None
    for layer in model.model.layers:
        a = layer.self_attn
        if not all(type(m) is nn.Linear and isinstance(m.weight._data, np.ndarray)
                   and m.weight._data.dtype == np.float32
                   for m in (a.q_proj, a.k_proj, a.v_proj, a.o_proj)):
            return None
        if not hasattr(layer.mlp, "experts") and not _plain_mlp(layer.mlp):
            return None  # a dense MLP with LoRA: the graph path
    w = _WEIGHTS.get(model)
    if w is None or len(w.layers) != len(model.model.layers):
        w = _WEIGHTS[model] = InferenceWeights(model)
        return w
    return w.refresh()


# each model's fused weights, kept apart from the model so that a copy or a pickle of it
# never carries fused matrices that no longer share memory with its parameters
_WEIGHTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# ---- the forward passes ----------------------------------------------------------------------
def _rows_times(x, parts, bias=None):
    """x (M, C) times each matrix of ``parts`` (N_i, C) transposed, side by side:
    (M, sum N_i), contiguous. One row as a GEMV ``W x``; 2..16 rows by
    :func:`few_rows_matmul`; 17..256 by :func:`mid_rows_matmul`; more as ``x W^T``
    (OpenBLAS; ``(W x^T)^T`` is a few percent faster in its GEMM at 128 rows, but the
    transposed result costs more to make contiguous)."""
    M = x.shape[0]
    if M == 1:
        outs = [(w @ x[0])[None] for w in parts]
    elif M <= 16:
        outs = [few_rows_matmul(x, w) for w in parts]
    elif M <= 256:
        outs = [mid_rows_matmul(x, w) for w in parts]
    else:
        outs = [x @ w.T for w in parts]
    y = np.concatenate(outs, axis=1) if len(outs) > 1 else np.ascontiguousarray(outs[0])
    if bias is not None:
        y += bias
    return y


def _split_rows(group, bias_group, n):
    """The matrices (and bias) of a q|k|v group split after its first ``n`` rows: ([q],
    [k, v] or the fused k|v rows), (q bias, k|v bias)."""
    if group.fused is not None:
        w = ([group.fused[:n]], [group.fused[n:]])
    else:
        w = ([group.views[0]], list(group.views[1:]))
    b = _bias(bias_group)
    return w, (None, None) if b is None else (b[:n], b[n:])


def _bias(group):
    return None if group is None else np.concatenate(group.parts(), axis=0)


def _mlp(L: _Layer, h):
    if L.moe is not None:
        from ..core.tensor import Tensor

        return L.moe(Tensor(h))._data
    a = swiglu_rows(_rows_times(h, L.gu.parts(), _bias(L.gu_b)))
    return _rows_times(a, [L.down._data], None if L.down_b is None else L.down_b._data)


def _attention_last(q, k, v, cu, scale):
    """Attention of each sequence's last position only: q (S, H, D) the last rows, k and v
    (N, K, D) the packed keys and values; returns (S, H, D)."""
    S, H, D = q.shape
    K = k.shape[1]
    R = H // K
    out = np.empty_like(q)
    for b in range(S):
        s, e = int(cu[b]), int(cu[b + 1])
        qs = q[b].reshape(K, R, D) * q.dtype.type(scale)
        att = qs @ k[s:e].transpose(1, 2, 0)  # (K, R, L)
        att -= att.max(axis=-1, keepdims=True)
        np.exp(att, out=att)
        att /= att.sum(axis=-1, keepdims=True)
        out[b] = (att @ v[s:e].transpose(1, 0, 2)).reshape(H, D)
    return out


def prefill(model, weights: InferenceWeights, tokens, cu, cos, sin, store=None,
            last_only: bool = False):
    """Logits of a packed token stream tokens (N,) with sequence bounds ``cu`` (S+1,) and
    rotary cos, sin (N, D/2): (N, V), or (S, V) of each sequence's last token with
    ``last_only``. ``store(layer, k, v)`` receives each layer's keys and values (N, K, D)."""
    from .ernie_generate import packed_attention_gqa

    emb = model.model.embed_tokens.weight._data
    x = emb[tokens]  # (N, C), a copy
    N = x.shape[0]
    last = cu[1:] - 1
    n_layers = len(weights.layers)
    for i, L in enumerate(weights.layers):
        H, K, D = L.H, L.K, L.D
        h = rms_norm_rows(x, L.ln1.weight._data, L.eps1)
        if last_only and i == n_layers - 1:  # queries of the last rows, keys of all
            w, b = _split_rows(L.qkv, L.qkv_b, H * D)
            kv = _rows_times(h, w[1], b[1])  # (N, 2K D)
            rotary_rows_(kv, cos, sin, K, D)
            q = _rows_times(h[last], w[0], b[0])  # (S, H D)
            rotary_rows_(q, np.ascontiguousarray(cos[last]), np.ascontiguousarray(sin[last]),
                         H, D)
            k, v = kv[:, :K * D].reshape(N, K, D), kv[:, K * D:].reshape(N, K, D)
            if store is not None:
                store(i, k, v)
            y = _attention_last(q.reshape(-1, H, D), k, v, cu, D ** -0.5)
            x = x[last]  # only the last rows go on
        else:
            qkv = _rows_times(h, L.qkv.parts(), _bias(L.qkv_b))  # (N, (H + 2K) D)
            rotary_rows_(qkv, cos, sin, H + K, D)
            q = qkv[:, :H * D].reshape(N, H, D)
            k = qkv[:, H * D:(H + K) * D].reshape(N, K, D)
            v = qkv[:, (H + K) * D:].reshape(N, K, D)
            if store is not None:
                store(i, k, v)
            y = packed_attention_gqa(q, k, v, cu, D ** -0.5)
        x += _rows_times(y.reshape(y.shape[0], H * D), [L.o._data],
                         None if L.o_b is None else L.o_b._data)
        x += _mlp(L, rms_norm_rows(x, L.ln2.weight._data, L.eps2))
    if last_only and n_layers == 0:
        x = x[last]
    return _head(model, x)


def _head(model, x):
    norm = model.model.norm
    h = rms_norm_rows(np.ascontiguousarray(x), norm.weight._data, float(norm.eps))
    head = model.lm_head
    return _rows_times(h, [head.weight._data], None if head.bias is None else head.bias._data)


def decode_step(model, weights: InferenceWeights, ids, keys, values, lengths, cos, sin,
                rows=None, keymask=None):
    """Logits (B, V) of one new token per row, ids (B,), row ``b`` at position
    ``lengths[b]`` of cache row ``rows[b]`` (default b); ``keys[layer]``, ``values[layer]``
    (B_cache, K, capacity, D) are written at those positions and read up to them;
    ``keymask`` (B, >= S) bools: the keys each row may see (a padded cache's real
    positions; the new one must be among them)."""
    emb = model.model.embed_tokens.weight._data
    x = emb[ids]  # (B, C)
    B = x.shape[0]
    lengths = np.asarray(lengths, dtype=np.int64)
    idx = np.arange(B) if rows is None else np.asarray(rows, dtype=np.int64)
    S = int(lengths.max()) + 1
    same = bool((lengths == lengths[0]).all())
    beyond = None if same else (np.arange(S)[None, :] > lengths[:, None])  # (B, S)
    if keymask is not None:  # padding in the cache: not seen
        hidden = ~np.asarray(keymask, dtype=bool)[:, :S]
        beyond = hidden if beyond is None else beyond | hidden
    for i, L in enumerate(weights.layers):
        H, K, D = L.H, L.K, L.D
        R = H // K
        h = rms_norm_rows(x, L.ln1.weight._data, L.eps1)
        qkv = _rows_times(h, L.qkv.parts(), _bias(L.qkv_b))
        rotary_rows_(qkv, cos, sin, H + K, D)
        q = qkv[:, :H * D].reshape(B, K, R, D)
        kc, vc = keys[i], values[i]
        kc[idx, :, lengths] = qkv[:, H * D:(H + K) * D].reshape(B, K, D)
        vc[idx, :, lengths] = qkv[:, (H + K) * D:].reshape(B, K, D)
        if rows is None:
            ks, vs = kc[:B, :, :S], vc[:B, :, :S]  # (B, K, S, D) views
        else:
            ks, vs = kc[idx, :, :S], vc[idx, :, :S]
        att = (q * q.dtype.type(D ** -0.5)) @ ks.transpose(0, 1, 3, 2)  # (B, K, R, S)
        if beyond is not None:  # positions past a row's own length
            np.copyto(att, -np.inf, where=beyond[:, None, None, :])
        att -= att.max(axis=-1, keepdims=True)
        np.exp(att, out=att)
        att /= att.sum(axis=-1, keepdims=True)
        y = (att @ vs).reshape(B, H * D)
        x += _rows_times(y, [L.o._data], None if L.o_b is None else L.o_b._data)
        x += _mlp(L, rms_norm_rows(x, L.ln2.weight._data, L.eps2))
    return _head(model, x)


# ---- entry points for ErnieForCausalLM (None: take the graph path) ---------------------------
def forward_fast(model, idx, cache, last_only: bool):
    """``model.forward`` without a graph: rows (B, T) of equal length from position 0 (one
    packed prefill, keys and values into ``cache``), or one new position per row after
    ``cache.length``. Logits (B, T or 1, V), or None when the fast path does not apply."""
    from ..core.tensor import is_grad_enabled

    idx = getattr(idx, "_data", idx)  # a Tensor of ids
    if is_grad_enabled() or not isinstance(idx, np.ndarray):
        return None
    B, T = idx.shape
    past = cache.length if cache is not None else 0
    if past and T != 1:
        return None
    w = fast_path(model)
    if w is None:
        return None
    cos, sin = model.rotary(np.tile(np.arange(past, past + T), B))
    if past:  # a decode step: every row at position ``past``
        logits = decode_step(model, w, idx.reshape(-1), cache.k, cache.v,
                             np.full(B, past, dtype=np.int64), cos, sin)
        cache.length += 1
        return logits.reshape(B, 1, -1)
    cu = np.arange(B + 1, dtype=np.int64) * T
    store = None
    if cache is not None:
        if T > cache.capacity:
            raise ValueError(f"KV cache full: 0 + {T} positions > capacity {cache.capacity}")

        def store(layer, k, v):
            if cache.k[layer] is None:
                shape = (B, k.shape[1], cache.capacity, k.shape[2])
                cache.k[layer] = np.empty(shape, dtype=k.dtype)
                cache.v[layer] = np.empty(shape, dtype=v.dtype)
            cache.k[layer][:, :, :T] = k.reshape(B, T, *k.shape[1:]).transpose(0, 2, 1, 3)
            cache.v[layer][:, :, :T] = v.reshape(B, T, *v.shape[1:]).transpose(0, 2, 1, 3)
    logits = prefill(model, w, idx.reshape(-1), cu, cos, sin, store, last_only)
    if cache is not None:
        cache.length += T
    return logits.reshape(B, 1 if last_only else T, -1)


def forward_packed_fast(model, tokens, cu, cos, sin, cache, last_only: bool):
    """``model.forward_packed`` without a graph (None when the fast path does not apply)."""
    from ..core.tensor import is_grad_enabled

    tokens = getattr(tokens, "_data", tokens)
    if is_grad_enabled() or not isinstance(tokens, np.ndarray):
        return None
    w = fast_path(model)
    if w is None:
        return None
    store = None if cache is None else (
        lambda layer, k, v: cache.store_packed(layer, k, v, cu))
    return prefill(model, w, tokens, cu, cos, sin, store, last_only)


def forward_step_fast(model, idx, cache, rows, cos, sin):
    """``model.forward_step`` without a graph, before ``cache.lengths`` moves on (None when
    the fast path does not apply)."""
    from ..core.tensor import is_grad_enabled

    idx = getattr(idx, "_data", idx)
    if is_grad_enabled() or not isinstance(idx, np.ndarray) or cache.k[0] is None:
        return None
    w = fast_path(model)
    if w is None:
        return None
    lengths = cache.lengths if rows is None else cache.lengths[rows]
    if int(lengths.max()) >= cache.capacity:
        raise ValueError(f"KV cache full: a row reached capacity {cache.capacity}")
    return decode_step(model, w, idx, cache.k, cache.v, lengths, cos, sin, rows)

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
    bf16_rows_matmul,
    few_rows_matmul,
    is_bf16,
    mid_rows_matmul,
    rms_norm_rows,
    rotary_rows_,
    round_bf16_,
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
        ok = all(_host_weight(a) and a.flags.c_contiguous
                 and (_owned(a) or (old_base is not None and a.base is old_base))
                 for a in arrays) and len({(a.shape[1:], a.dtype) for a in arrays}) == 1
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


def _host_weight(a) -> bool:
    """A host array the fast path multiplies by: float32, or bfloat16 (widened to float32
    as it is read: the activations stay float32)."""
    return isinstance(a, np.ndarray) and (a.dtype == np.float32 or is_bf16(a))


def _f32(a):
    """``a`` as float32 (a bfloat16 norm scale, bias or embedding row: exact)."""
    return a if a is None or a.dtype == np.float32 else a.astype(np.float32)


def _owned(a) -> bool:
    """Whether array ``a`` is the whole of its memory: it owns it, wraps a plain buffer, or
    reshapes a whole array (what a checkpoint reader returns); not a slice of a larger
    buffer (a ZeRO flat buffer), whose owner would stop seeing the parameter once it is
    pointed elsewhere."""
    return (a.flags.owndata or not isinstance(a.base, np.ndarray)
            or a.base.size == a.size)


class _Layer:
    def __init__(self, layer):
        self.layer = layer
        a = layer.self_attn
        self.H, self.K, self.D = a.H, a.K, a.D
        self.ln1, self.ln2 = layer.input_layernorm, layer.post_attention_layernorm
        self.eps1, self.eps2 = float(self.ln1.eps), float(self.ln2.eps)
        projs = (a.q_proj, a.k_proj, a.v_proj)
        self.qkv = _Group([p.weight for p in projs])
        self.qkv_b = _Group([p.bias for p in projs]) if a.q_proj.bias is not None else None
        self.o, self.o_b = a.o_proj.weight, a.o_proj.bias
        mlp = layer.mlp
        self.moe = mlp if hasattr(mlp, "experts") else None
        if self.moe is None:
            self.gu = _Group([mlp.gate_proj.weight, mlp.up_proj.weight])
            self.gu_b = (_Group([mlp.gate_proj.bias, mlp.up_proj.bias])
                         if mlp.gate_proj.bias is not None else None)
            self.down, self.down_b = mlp.down_proj.weight, mlp.down_proj.bias
        self.adapters()

    def same_parameters(self) -> bool:
        """Whether the layer's modules still hold the parameters this was made of (a
        parameter object replaced by assignment: made again)."""
        a, mlp = self.layer.self_attn, self.layer.mlp
        same = _same([m.weight for m in (a.q_proj, a.k_proj, a.v_proj)], self.qkv.params)
        same = same and a.o_proj.weight is self.o and a.o_proj.bias is self.o_b
        if self.moe is not None:
            return same and mlp is self.moe
        return (same and not hasattr(mlp, "experts")
                and _same([mlp.gate_proj.weight, mlp.up_proj.weight], self.gu.params)
                and mlp.down_proj.weight is self.down and mlp.down_proj.bias is self.down_b)

    def adapters(self) -> None:
        """The LoRA adapters now active on the layer's projections, each with the columns of
        its group's output it adds to: ``qkv_lora``, ``o_lora``, ``gu_lora``, ``down_lora``
        (lists of ``(first column, LoRALinear)``; empty without LoRA)."""
        a = self.layer.self_attn
        q, k = self.H * self.D, self.K * self.D
        self.qkv_lora = _active([(0, a.q_proj), (q, a.k_proj), (q + k, a.v_proj)])
        self.o_lora = _active([(0, a.o_proj)])
        if self.moe is None:
            mlp = self.layer.mlp
            self.gu_lora = _active([(0, mlp.gate_proj),
                                    (mlp.gate_proj.out_features, mlp.up_proj)])
            joint = getattr(mlp, "gate_up_lora", None)  # (experts only, as apply_lora puts it)
            if joint is not None and not joint.disabled:
                self.gu_lora.append((0, joint))
            self.down_lora = _active([(0, mlp.down_proj)])

    def refresh(self) -> None:
        self.qkv = self.qkv.refreshed()
        if self.qkv_b is not None:
            self.qkv_b = self.qkv_b.refreshed()
        if self.moe is None:
            self.gu = self.gu.refreshed()
            if self.gu_b is not None:
                self.gu_b = self.gu_b.refreshed()
        self.adapters()


def _same(xs, ys) -> bool:
    return len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys))


def _plain_mlp(mlp) -> bool:
    """A SwiGLU MLP of three plain ``nn.Linear`` (ernie.ErnieMLP without LoRA)."""
    return (getattr(mlp, "gate_up_lora", 1) is None
            and all(type(getattr(mlp, n, None)) is nn.Linear
                    for n in ("gate_proj", "up_proj", "down_proj")))


def _linear_ok(m) -> bool:
    """A projection the fast path runs: a plain ``nn.Linear`` of host float32/bfloat16
    weights, or a :class:`~.lora.LoRALinear` on one (its adapter added as ``s (x A^T)
    B^T``, as its forward does) without DoRA, without an active dropout (training mode:
    the graph path draws it) and without other active adapters summed in (``set_adapter([a,
    b])``: the graph path)."""
    if type(m) is nn.Linear:
        return _host_weight(m.weight._data)
    from .lora import LoRALinear

    return (type(m) is LoRALinear and _host_weight(m.weight._data)
            and (m.disabled or (m.lora_magnitude_vector is None and m.also is None
                                and (m.dropout is None or not m.dropout.training)
                                and _host_weight(m.lora_A.weight._data)
                                and _host_weight(m.lora_B.weight._data))))


def _mlp_ok(mlp) -> bool:
    """A SwiGLU MLP the fast path runs: its three projections each :func:`_linear_ok`, and
    an expert's joint gate|up adapter (``GateUpLoRA``) on host weights."""
    if not all(_linear_ok(getattr(mlp, n, None)) for n in ("gate_proj", "up_proj",
                                                            "down_proj")):
        return False
    g = getattr(mlp, "gate_up_lora", None)
    return g is None or g.disabled or (g.also is None and _host_weight(g.lora_A.weight._data)
                                       and _host_weight(g.lora_B.weight._data))


def _active(pairs) -> list:
    """The ``(column, module)`` pairs whose module is a LoRA layer with its adapter on."""
    return [(c, m) for c, m in pairs if type(m) is not nn.Linear and not m.disabled]


def _add_lora(y, x, adapters, lo: int = 0, hi: int | None = None) -> None:
    """Add, in place, each adapter's ``s (x A^T) B^T`` to its columns of y (M, N) (y holds
    the group's columns ``lo .. hi``; adapters outside them are left out). The adapters'
    ``A`` side by side: one product for the group, then one per ``B``. A bfloat16 model's
    adapter, as peft runs it (its adapter weights cast to float32, ``autocast_adapter_dtype``):
    the update in float32, the sum rounded once."""
    hi = y.shape[1] + lo if hi is None else hi
    inside = [(c, m) for c, m in adapters if lo <= c < hi]
    if not inside:
        return
    t = _rows_times(x, [m.lora_A.weight._data for _, m in inside], rounded=False)
    r0 = 0
    for c, m in inside:
        r = m.lora_A.weight.shape[0]
        B = m.lora_B.weight._data
        d = _rows_times(np.ascontiguousarray(t[:, r0:r0 + r]), [B], rounded=False)
        d *= np.float32(m.scaling)
        part = y[:, c - lo:c - lo + d.shape[1]]
        part += d
        base = getattr(m, "weight", None)  # a joint gate|up adapter has none of its own
        if is_bf16(B) or (base is not None and is_bf16(base._data)):
            round_bf16_(part)
        r0 += r


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
    if not _host_weight(model.model.embed_tokens.weight._data):
        return None
    if type(model.lm_head) is not nn.Linear or not _host_weight(model.lm_head.weight._data):
        return None
    for layer in model.model.layers:
        a = layer.self_attn
        if not all(_linear_ok(m) for m in (a.q_proj, a.k_proj, a.v_proj, a.o_proj)):
            return None
        if not hasattr(layer.mlp, "experts") and not _mlp_ok(layer.mlp):
            return None  # a dense MLP of other modules: the graph path
    w = _WEIGHTS.get(model)
    if (w is None or len(w.layers) != len(model.model.layers)
            or any(L.layer is not layer or not L.same_parameters()
                   for L, layer in zip(w.layers, model.model.layers))):
        w = _WEIGHTS[model] = InferenceWeights(model)
        return w
    return w.refresh()


# each model's fused weights, kept apart from the model so that a copy or a pickle of it
# never carries fused matrices that no longer share memory with its parameters
_WEIGHTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


# ---- the forward passes ----------------------------------------------------------------------
def _rows_times(x, parts, bias=None, rounded: bool = True):
    """x (M, C) times each matrix of ``parts`` (N_i, C) transposed, side by side:
    (M, sum N_i), contiguous. One row as a GEMV ``W x``; 2..16 rows by
    :func:`few_rows_matmul`; 17..256 by :func:`mid_rows_matmul`; more as ``x W^T``
    (OpenBLAS; ``(W x^T)^T`` is a few percent faster in its GEMM at 128 rows, but the
    transposed result costs more to make contiguous). With bfloat16 weights the output is
    rounded to bf16 (as torch's bf16 linear gives it) unless ``rounded`` is False."""
    M = x.shape[0]
    bf = any(is_bf16(w) for w in parts)
    if bf:
        outs = [bf16_rows_matmul(x, w) if is_bf16(w) else x @ w.T for w in parts]
    elif M == 1:
        outs = [(w @ x[0])[None] for w in parts]
    elif M <= 16:
        outs = [few_rows_matmul(x, w) for w in parts]
    elif M <= 256:
        outs = [mid_rows_matmul(x, w) for w in parts]
    else:
        outs = [x @ w.T for w in parts]
    y = np.concatenate(outs, axis=1) if len(outs) > 1 else np.ascontiguousarray(outs[0])
    if bias is not None:
        y += _f32(bias)
    if bf and rounded:  # a bf16 layer's output, as torch's: float32 sums rounded once
        round_bf16_(y)
    return y


def _rnd(a, bf: bool):
    """``a`` rounded in place to bfloat16's values when the model is bfloat16 (where
    torch's bf16 model holds a bf16 tensor), else as it is."""
    return round_bf16_(a) if bf else a


def _norm(x, w, eps, bf: bool):
    """RMSNorm of rows x; for a bfloat16 model as transformers' ``Ernie4_5RMSNorm``: the
    normalised rows rounded to bf16, times the weight, rounded."""
    if not bf:
        return rms_norm_rows(x, _f32(w), eps)
    h = round_bf16_(rms_norm_rows(x, np.ones(x.shape[1], dtype=np.float32), eps))
    h *= _f32(w)
    return round_bf16_(h)


def _swiglu(gu, bf: bool):
    """``silu(gate) * up`` from ``gate | up`` rows; bfloat16: each of the two rounded."""
    if not bf:
        return swiglu_rows(gu)
    inner = gu.shape[1] // 2
    g = gu[:, :inner]
    a = np.negative(g)
    np.exp(a, out=a)
    a += 1
    np.divide(g, a, out=a)
    round_bf16_(a)
    a *= gu[:, inner:]
    return round_bf16_(a)


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


def _mlp(L: _Layer, h, bf: bool = False):
    if L.moe is not None:
        return _moe(L.moe, h, bf)
    gu = _rows_times(h, L.gu.parts(), _bias(L.gu_b))
    _add_lora(gu, h, L.gu_lora)
    a = _swiglu(gu, bf)
    y = _rows_times(a, [L.down._data], None if L.down_b is None else L.down_b._data)
    _add_lora(y, a, L.down_lora)
    return y


def _o_proj(L: _Layer, y):
    """The attention's output projection of y (M, H*D), its adapter added."""
    out = _rows_times(y, [L.o._data], None if L.o_b is None else L.o_b._data)
    _add_lora(out, y, L.o_lora)
    return out


def _merged_bf16(weights, adapter):
    """bfloat16 weights (the rows of ``weights`` stacked) with an adapter folded in as peft
    folds one on a bf16 parameter (``target_parameters``: the experts; one ``baddbmm`` in
    bf16): ``W + s B A`` in float32, rounded to bf16 once."""
    w = np.concatenate([_f32(a) for a in weights]) if len(weights) > 1 else _f32(weights[0])
    d = _f32(adapter.lora_B.weight._data) @ _f32(adapter.lora_A.weight._data)
    d *= np.float32(adapter.scaling)
    return round_bf16_(w + d).astype(weights[0].dtype)


def _expert(mlp, h, bf: bool = False, routed: bool = False):
    """A SwiGLU MLP (an expert, or the shared experts) on rows h (M, C): gate and up side
    by side, with their adapters (each projection's, or the expert's joint gate|up one).
    A routed expert of a bfloat16 model with adapters: its weights with the adapters folded
    in (:func:`_merged_bf16`), as peft's bf16 experts."""
    joint = getattr(mlp, "gate_up_lora", None)
    joint = None if joint is None or joint.disabled else joint
    down = _active([(0, mlp.down_proj)])
    if routed and bf and (joint is not None or down):
        gw = [mlp.gate_proj.weight._data, mlp.up_proj.weight._data]
        gu = _rows_times(h, [_merged_bf16(gw, joint) if joint is not None else gw[0]]
                         + ([] if joint is not None else gw[1:]))
        a = _swiglu(gu, bf)
        dw = mlp.down_proj.weight._data
        return _rows_times(a, [_merged_bf16([dw], down[0][1]) if down else dw])
    b = None if mlp.gate_proj.bias is None else np.concatenate(
        [_f32(mlp.gate_proj.bias._data), _f32(mlp.up_proj.bias._data)])
    gu = _rows_times(h, [mlp.gate_proj.weight._data, mlp.up_proj.weight._data], b)
    _add_lora(gu, h, _active([(0, mlp.gate_proj),
                              (mlp.gate_proj.out_features, mlp.up_proj)]))
    if joint is not None:
        _add_lora(gu, h, [(0, joint)])
    a = _swiglu(gu, bf)
    y = _rows_times(a, [mlp.down_proj.weight._data],
                    None if mlp.down_proj.bias is None else mlp.down_proj.bias._data)
    _add_lora(y, a, down)
    return y


def _moe(moe, h, bf: bool = False):
    """``ErnieMoE.forward`` on plain arrays (its router as it is: float32, the same choices
    and weights), each chosen expert once on its rows; experts with LoRA (or any that is
    not a plain MLP of host weights): the module itself. bfloat16, as transformers'
    ``Ernie4_5_MoeExperts`` gives it: the routing weights rounded, each expert's weighted
    output rounded, their sum (float32) rounded once."""
    from ..core.tensor import Tensor

    mlps = list(moe.experts) + ([moe.shared_experts] if moe.shared_experts is not None
                                else [])
    if not all(_mlp_ok(m) for m in mlps):
        return moe(Tensor(h))._data
    _, chosen, w = moe.route(Tensor(h))
    moe.last_selection = chosen
    N, k = chosen.shape
    flat = np.asarray(chosen).reshape(-1)
    order = np.argsort(flat, kind="stable")
    counts = np.bincount(flat, minlength=len(moe.experts))
    src = h[order // k]
    y = np.empty((N * k, h.shape[1]), dtype=np.float32)
    start = 0
    for e in np.flatnonzero(counts):
        n = int(counts[e])
        y[order[start:start + n]] = _expert(moe.experts[e], src[start:start + n], bf,
                                            routed=True)
        start += n
    w = np.array(w._data, dtype=np.float32).reshape(N, k, 1)
    if not bf:
        out = (y.reshape(N, k, -1) * w).sum(axis=1)
    else:  # each slot's weighted output rounded, their sum rounded once
        out = round_bf16_((round_bf16_(y.reshape(N, k, -1) * round_bf16_(w))).sum(axis=1))
    if moe.shared_experts is not None:
        out += _expert(moe.shared_experts, h, bf)
        _rnd(out, bf)
    return out


def _softmax_times(att, v, bf: bool):
    """``softmax(att) @ v`` over the last axis of att (scores, modified); bfloat16: as
    torch's CPU attention, the unnormalised probabilities rounded before the product and
    the float32 sum dividing after."""
    att -= att.max(axis=-1, keepdims=True)
    np.exp(att, out=att)
    total = att.sum(axis=-1, keepdims=True)
    if not bf:
        att /= total
        return att @ v
    y = round_bf16_(np.ascontiguousarray(att)) @ v
    y /= total
    return y


def _attention_last(q, k, v, cu, scale, bf: bool = False):
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
        out[b] = _softmax_times(att, v[s:e].transpose(1, 0, 2), bf).reshape(H, D)
    return out


def prefill(model, weights: InferenceWeights, tokens, cu, cos, sin, store=None,
            last_only: bool = False):
    """Logits of a packed token stream tokens (N,) with sequence bounds ``cu`` (S+1,) and
    rotary cos, sin (N, D/2): (N, V), or (S, V) of each sequence's last token with
    ``last_only``. ``store(layer, k, v)`` receives each layer's keys and values (N, K, D).
    A bfloat16 model rounds where transformers' bf16 model holds bf16 tensors (see
    :func:`_rnd`): each projection's output, the rotated q and k, the attention's output,
    the norms, the MLP's activations, the residual stream."""
    from .ernie_generate import packed_attention_gqa

    emb = model.model.embed_tokens.weight._data
    bf = is_bf16(emb)
    x = _f32(emb[tokens])  # (N, C), a copy
    N = x.shape[0]
    last = cu[1:] - 1
    n_layers = len(weights.layers)
    for i, L in enumerate(weights.layers):
        H, K, D = L.H, L.K, L.D
        h = _norm(x, L.ln1.weight._data, L.eps1, bf)
        if last_only and i == n_layers - 1:  # queries of the last rows, keys of all
            w, b = _split_rows(L.qkv, L.qkv_b, H * D)
            kv = _rows_times(h, w[1], b[1])  # (N, 2K D)
            _add_lora(kv, h, L.qkv_lora, H * D, (H + 2 * K) * D)
            rotary_rows_(kv, cos, sin, K, D)
            _rnd(kv, bf)
            h_last = h[last]
            q = _rows_times(h_last, w[0], b[0])  # (S, H D)
            _add_lora(q, h_last, L.qkv_lora, 0, H * D)
            rotary_rows_(q, np.ascontiguousarray(cos[last]), np.ascontiguousarray(sin[last]),
                         H, D)
            _rnd(q, bf)
            k, v = kv[:, :K * D].reshape(N, K, D), kv[:, K * D:].reshape(N, K, D)
            if store is not None:
                store(i, k, v)
            y = _attention_last(q.reshape(-1, H, D), k, v, cu, D ** -0.5, bf)
            x = x[last]  # only the last rows go on
        else:
            qkv = _rows_times(h, L.qkv.parts(), _bias(L.qkv_b))  # (N, (H + 2K) D)
            _add_lora(qkv, h, L.qkv_lora)
            rotary_rows_(qkv, cos, sin, H + K, D)
            _rnd(qkv, bf)
            q = qkv[:, :H * D].reshape(N, H, D)
            k = qkv[:, H * D:(H + K) * D].reshape(N, K, D)
            v = qkv[:, (H + K) * D:].reshape(N, K, D)
            if store is not None:
                store(i, k, v)
            y = packed_attention_gqa(q, k, v, cu, D ** -0.5, bf16=bf)
        y = _rnd(np.ascontiguousarray(y.reshape(y.shape[0], H * D), dtype=np.float32), bf)
        x += _o_proj(L, y)
        _rnd(x, bf)
        x += _mlp(L, _norm(x, L.ln2.weight._data, L.eps2, bf), bf)
        _rnd(x, bf)
    if last_only and n_layers == 0:
        x = x[last]
    return _head(model, x, bf)


def _head(model, x, bf: bool = False):
    norm = model.model.norm
    h = _norm(np.ascontiguousarray(x), norm.weight._data, float(norm.eps), bf)
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
    bf = is_bf16(emb)
    x = _f32(emb[ids])  # (B, C), a copy
    B = x.shape[0]
    lengths = np.asarray(lengths, dtype=np.int64)
    idx = np.arange(B) if rows is None else np.asarray(rows, dtype=np.int64)
    S = int(lengths.max()) + 1
    same = bool((lengths == lengths[0]).all())
    beyond = None if same else (np.arange(S)[None, :] > lengths[:, None])  # (B, S)
    if keymask is not None:  # padding in the cache: not seen
        hidden = ~np.asarray(keymask, dtype=bool)[:, :S]
        beyond = hidden if beyond is None else beyond | hidden
    # rows of unequal lengths (a packed batch), no holes: each row attends over its own
    # positions, not the longest row's (round 46 h10: half the attention's work on 8 rows
    # of 16..512); a row's scores are then those it has alone
    own = keymask is None and beyond is not None and \
        float(lengths.sum() + B) < 0.8 * B * S
    for i, L in enumerate(weights.layers):
        H, K, D = L.H, L.K, L.D
        R = H // K
        h = _norm(x, L.ln1.weight._data, L.eps1, bf)
        qkv = _rows_times(h, L.qkv.parts(), _bias(L.qkv_b))
        _add_lora(qkv, h, L.qkv_lora)
        rotary_rows_(qkv, cos, sin, H + K, D)
        _rnd(qkv, bf)
        q = qkv[:, :H * D].reshape(B, K, R, D)
        kc, vc = keys[i], values[i]
        kc[idx, :, lengths] = qkv[:, H * D:(H + K) * D].reshape(B, K, D)
        vc[idx, :, lengths] = qkv[:, (H + K) * D:].reshape(B, K, D)
        if own:
            y = np.empty((B, K, R, D), dtype=np.float32)
            for b in range(B):
                c, s = int(idx[b]), int(lengths[b]) + 1
                att = (q[b:b + 1] * q.dtype.type(D ** -0.5)) @ \
                    kc[c:c + 1, :, :s].transpose(0, 1, 3, 2)
                y[b:b + 1] = _softmax_times(att, vc[c:c + 1, :, :s], bf)
        else:
            if rows is None:
                ks, vs = kc[:B, :, :S], vc[:B, :, :S]  # (B, K, S, D) views
            else:
                ks, vs = kc[idx, :, :S], vc[idx, :, :S]
            att = (q * q.dtype.type(D ** -0.5)) @ ks.transpose(0, 1, 3, 2)  # (B, K, R, S)
            if beyond is not None:  # positions past a row's own length
                np.copyto(att, -np.inf, where=beyond[:, None, None, :])
            y = _softmax_times(att, vs, bf)
        y = _rnd(np.ascontiguousarray(y.reshape(B, H * D), dtype=np.float32), bf)
        x += _o_proj(L, y)
        _rnd(x, bf)
        x += _mlp(L, _norm(x, L.ln2.weight._data, L.eps2, bf), bf)
        _rnd(x, bf)
    return _head(model, x, bf)


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
    w = fast_path(model)
    if w is None:
        return None
    if past and T != 1:  # several new positions after a cache (assisted decoding's check)
        logits = extend(model, w, idx, cache, past, last_only)
        if logits is not None:
            cache.length += T
        return logits
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


def extend(model, weights: InferenceWeights, idx, cache, past: int, last_only: bool):
    """Logits (B, T or 1, V) of T new positions per row (B, T) after the ``past`` cached
    ones (every row at the same place), keys and values written into ``cache`` there: the
    projections of all T rows at once (the weights read once), each query attending to the
    cache and the new positions up to its own. float32 models (None for bfloat16: the
    graph path keeps transformers' bf16 rounding)."""
    emb = model.model.embed_tokens.weight._data
    if is_bf16(emb) or any(a is None or not isinstance(a, np.ndarray) or a.dtype != np.float32
                           for a in (*cache.k, *cache.v)):
        return None
    B, T = idx.shape
    S = past + T
    if S > cache.capacity:
        raise ValueError(f"KV cache full: {past} + {T} positions > capacity {cache.capacity}")
    cos, sin = model.rotary(np.tile(np.arange(past, S), B))
    x = _f32(emb[idx.reshape(-1)])  # (B T, C)
    allowed = np.arange(S)[None, :] <= (past + np.arange(T))[:, None]  # (T, S)
    bias = np.where(allowed, np.float32(0), np.float32(-np.inf))
    for i, L in enumerate(weights.layers):
        H, K, D = L.H, L.K, L.D
        h = _norm(x, L.ln1.weight._data, L.eps1, False)
        qkv = _rows_times(h, L.qkv.parts(), _bias(L.qkv_b))  # (B T, (H + 2K) D)
        _add_lora(qkv, h, L.qkv_lora)
        rotary_rows_(qkv, cos, sin, H + K, D)
        q = qkv[:, :H * D].reshape(B, T, K, H // K, D).transpose(0, 2, 3, 1, 4)
        k = qkv[:, H * D:(H + K) * D].reshape(B, T, K, D).transpose(0, 2, 1, 3)
        v = qkv[:, (H + K) * D:].reshape(B, T, K, D).transpose(0, 2, 1, 3)
        cache.k[i][:, :, past:S] = k
        cache.v[i][:, :, past:S] = v
        keys, vals = cache.k[i][:, :, None, :S], cache.v[i][:, :, None, :S]  # (B, K, 1, S, D)
        att = (q * np.float32(D ** -0.5)) @ keys.swapaxes(-1, -2) + bias  # (B, K, R, T, S)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ vals).transpose(0, 3, 1, 2, 4).reshape(B * T, H * D)  # (B T, H D)
        x += _o_proj(L, np.ascontiguousarray(y, dtype=np.float32))
        x += _mlp(L, _norm(x, L.ln2.weight._data, L.eps2, False), False)
    if last_only:
        x = x.reshape(B, T, -1)[:, -1]
    return _head(model, x).reshape(B, 1 if last_only else T, -1)


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

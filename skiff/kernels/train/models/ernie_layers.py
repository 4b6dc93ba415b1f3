"""The layers of an ERNIE-4.5 decoder (:mod:`.ernie` has the model, its config and its
generation): the SwiGLU MLP, grouped-query attention with the interleaved rotary embedding
(dense, packed and one decode step), the mixture of experts with its float32 router and
shared experts, the pre-norm decoder layer, and the embedding, layers and final norm
(``model.*`` in a checkpoint)."""

from __future__ import annotations

import numpy as np

from ..core import nn
from ..core.nn import functional as F
from ..core.tensor import Tensor, cat, is_grad_enabled, split, where
from .ernie_config import ErnieConfig
from .ernie_generate import packed_attention_gqa
from .gpt import _host

__all__ = ["ErnieAttention", "ErnieDecoderLayer", "ErnieMLP", "ErnieMoE", "ErnieMoeStatics",
           "ErnieModel", "rows_linear"]


def rows_linear(lin, x):
    """``lin(x)`` for a few rows x (B, C) in a decode step (no graph): computed as
    ``(W @ x^T)^T``, which BLAS runs 1.3-1.6x faster than ``x @ W^T`` when B is small and
    W large (8 rows against the 0.3B's MLP or its 103424-row head); the same numbers. A
    LoRA layer, or one that keeps a graph, is called as it is."""
    if type(lin) is not nn.Linear or is_grad_enabled() or x.ndim != 2:
        return lin(x)
    y = (lin.weight._data @ x._data.T).T
    if lin.bias is not None:
        y = y + lin.bias._data
    return Tensor(y)



class ErnieRMSNorm(nn.RMSNorm):
    """RMSNorm as the reference computes it: for 16-bit inputs the statistics in float32
    and the normalised value rounded to the input's dtype, then times the weight (the
    transformers model's order; ``nn.RMSNorm`` follows torch's, ``x * rstd * w`` in float32
    rounded once, which differs from it in the last bit). float32 inputs: ``nn.RMSNorm``."""

    def forward(self, x):
        if x.dtype.itemsize >= 4:
            return super().forward(x)
        xhat = F.rms_norm(x.astype(np.float32), None, self.eps).astype(x.dtype)
        return xhat * self.weight


class ErnieMLP(nn.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, hidden: int, inner: int, bias: bool, dtype):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=bias, dtype=dtype)
        self.up_proj = nn.Linear(hidden, inner, bias=bias, dtype=dtype)
        self.down_proj = nn.Linear(inner, hidden, bias=bias, dtype=dtype)
        self.gate_up_lora = None  # an expert's LoRA of gate and up together (lora.GateUpLoRA)

    def forward_rows(self, x):  # x (B, C): a decode step, no graph
        if self.gate_up_lora is not None and not self.gate_up_lora.disabled:
            return self(x)
        return rows_linear(self.down_proj, F.silu(rows_linear(self.gate_proj, x))
                           * rows_linear(self.up_proj, x))

    def forward(self, x):
        gate, up = self.gate_proj(x), self.up_proj(x)
        if self.gate_up_lora is not None and not self.gate_up_lora.disabled:
            d_gate, d_up = self.gate_up_lora(x)
            gate, up = gate + d_gate, up + d_up
        return self.down_proj(F.silu(gate) * up)


class ErnieAttention(nn.Module):
    """Grouped-query causal self-attention with the interleaved rotary embedding."""

    def __init__(self, cfg: ErnieConfig, dtype):
        super().__init__()
        H, K, D, C = (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim,
                      cfg.hidden_size)
        self.H, self.K, self.D = H, K, D
        self.q_proj = nn.Linear(C, H * D, bias=cfg.use_bias, dtype=dtype)
        self.k_proj = nn.Linear(C, K * D, bias=cfg.use_bias, dtype=dtype)
        self.v_proj = nn.Linear(C, K * D, bias=cfg.use_bias, dtype=dtype)
        self.o_proj = nn.Linear(H * D, C, bias=cfg.use_bias, dtype=dtype)

    def forward(self, x, cos, sin, cache=None, layer: int = 0):  # x (B, T, C); cos (T, D/2)
        B, T, _ = x.shape
        H, K, D = self.H, self.K, self.D
        R = H // K
        q = F.rotary_embedding(self.q_proj(x).reshape(B, T, H, D), cos[:, None], sin[:, None])
        k = F.rotary_embedding(self.k_proj(x).reshape(B, T, K, D), cos[:, None], sin[:, None])
        v = self.v_proj(x).reshape(B, T, K, D)
        if (B == 1 and T > 1 and not is_grad_enabled()
                and (cache is None or cache.length == 0)):  # an inference prefill
            if cache is not None:
                cache.update(layer, k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3))
            y = packed_attention_gqa(q._data[0], k._data[0], v._data[0], [0, T], D ** -0.5)
            return self.o_proj(Tensor(y.reshape(1, T, H * D)))
        q = q.reshape(B, T, K, R, D).transpose(0, 2, 3, 1, 4)  # (B, K, R, T, D)
        k = k.transpose(0, 2, 1, 3)  # (B, K, T, D)
        v = v.transpose(0, 2, 1, 3)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # (B, K, S, D): the past and these T
        S = k.shape[2]
        # each k/v head serves R query heads: a broadcast view, summed back in backward
        k = k.reshape(B, K, 1, S, D).expand(B, K, R, S, D)
        v = v.reshape(B, K, 1, S, D).expand(B, K, R, S, D)
        y = F.scaled_dot_product_attention(q, k, v, causal=True, scale=D ** -0.5)
        return self.o_proj(y.transpose(0, 3, 1, 2, 4).reshape(B, T, H * D))

    def forward_packed(self, x, cos, sin, cu_seqlens, cache=None, layer: int = 0):
        N = x.shape[0]  # x (N, C); cos (N, D/2)
        H, K, D = self.H, self.K, self.D
        R = H // K
        q = F.rotary_embedding(self.q_proj(x).reshape(N, H, D), cos[:, None], sin[:, None])
        k = F.rotary_embedding(self.k_proj(x).reshape(N, K, D), cos[:, None], sin[:, None])
        v = self.v_proj(x).reshape(N, K, D)
        if cache is not None:  # a packed prefill: each prompt's keys/values into its row
            cache.store_packed(layer, k._data, v._data, cu_seqlens)
        if not is_grad_enabled():  # inference: the k/v heads are not copied per query head
            y = packed_attention_gqa(q._data, k._data, v._data, cu_seqlens, D ** -0.5)
            return self.o_proj(Tensor(y.reshape(N, H * D)))
        k = k.reshape(N, K, 1, D).expand(N, K, R, D).reshape(N, H, D)
        v = v.reshape(N, K, 1, D).expand(N, K, R, D).reshape(N, H, D)
        y = F.packed_causal_attention(q, k, v, cu_seqlens, scale=D ** -0.5)  # (N, H, D)
        return self.o_proj(y.reshape(N, H * D))

    def forward_step(self, x, cos, sin, cache, layer: int, rows=None):  # x (B, C)
        """One new position per row, each row at its own position (no graph kept);
        ``rows``: which cache rows these are (default all)."""
        B = x.shape[0]
        q = F.rotary_embedding(rows_linear(self.q_proj, x).reshape(B, self.H, self.D),
                               cos[:, None], sin[:, None])
        k = F.rotary_embedding(rows_linear(self.k_proj, x).reshape(B, self.K, self.D),
                               cos[:, None], sin[:, None])
        v = rows_linear(self.v_proj, x).reshape(B, self.K, self.D)
        y = cache.attend(layer, q._data, k._data, v._data, self.D ** -0.5, rows)  # (B, H*D)
        return rows_linear(self.o_proj, Tensor(y))


class ErnieMoeStatics(nn.Module):
    """The router's expert bias (``e_score_correction_bias``, (1, E)): it moves which experts
    are chosen, not their weights, and is not trained by the loss."""

    def __init__(self, num_experts: int):
        super().__init__()
        self.register_buffer("e_score_correction_bias",
                             Tensor(np.zeros((1, num_experts), np.float32)))


class ErnieMoE(nn.Module):
    """Top-k routed experts plus shared experts."""

    def __init__(self, cfg: ErnieConfig, dtype):
        super().__init__()
        C, E = cfg.hidden_size, cfg.moe_num_experts
        self.k, self.norm_min = cfg.moe_k, cfg.moe_norm_min
        self.gate = nn.Linear(C, E, bias=False, dtype=np.float32)  # the router, in float32
        self.moe_statics = ErnieMoeStatics(E)
        # the routed experts have no biases, even with use_bias (transformers' fused
        # experts hold none; the shared experts and projections have them)
        self.experts = nn.ModuleList([ErnieMLP(C, cfg.moe_intermediate_size, False, dtype)
                                      for _ in range(E)])
        self.shared_experts = (ErnieMLP(C, cfg.moe_intermediate_size
                                        * cfg.moe_num_shared_experts, cfg.use_bias, dtype)
                               if cfg.moe_num_shared_experts > 0 else None)
        self.last_selection = None  # (N, k) expert ids of the last forward, for inspection
        self.last_router_logits = None  # (N, E) router logits of the last forward

    def route(self, h):
        """Router probabilities (N, E), chosen experts (N, k) and their weights (N, k)."""
        xp = h.xp
        w = self.gate.weight
        logits = self.gate(h.astype(np.float32)) if w.dtype == np.float32 else F.linear(
            h.astype(np.float32), w.astype(np.float32))  # model.to(float64): as transformers'
        self.last_router_logits = logits  # (N, E), for the load-balancing loss
        probs = F.softmax(logits, axis=-1)
        scores = probs._data + self.moe_statics.e_score_correction_bias._data.reshape(-1)
        chosen = xp.argsort(-scores, axis=-1, kind="stable")[:, :self.k]  # (N, k)
        rows = xp.arange(chosen.shape[0])[:, None]
        w = probs[rows, chosen]  # (N, k)
        total = w.sum(axis=-1, keepdims=True)
        total = where(total._data < self.norm_min, self.norm_min, total)
        return probs, chosen, w / total

    def forward(self, x):
        shape = x.shape
        h = x.reshape(-1, shape[-1])  # (N, C)
        N, k = h.shape[0], self.k
        xp = h.xp
        _, chosen, w = self.route(h)
        self.last_selection = chosen
        # group the N*k (token, slot) pairs by expert: one gather, one split, each expert
        # once on its rows, one concatenate, and the inverse permutation back
        flat = chosen.reshape(-1)
        order = xp.argsort(flat, kind="stable")
        counts = np.bincount(_host(flat), minlength=len(self.experts)).tolist()
        used = [e for e, n in enumerate(counts) if n]
        rows = split(h[order // k], [counts[e] for e in used], axis=0)
        y = cat([self.experts[e](r) for e, r in zip(used, rows)], axis=0)  # (N*k, C)
        inverse = xp.empty_like(order)
        inverse[order] = xp.arange(order.shape[0])
        y = y[inverse].reshape(N, k, -1)  # back to (token, slot) order
        y = (y * w.astype(y.dtype).reshape(N, k, 1)).sum(axis=1)
        idle = [p for e, n in enumerate(counts) if not n for name, p in
                self.experts[e].named_parameters() if p.requires_grad]
        if idle and is_grad_enabled():
            # trainable weights of experts no token chose (LoRA adapters): a zero gradient,
            # as peft's fused expert adapters get one (AdamW moves their moments then too)
            y = y + sum(p.sum() for p in idle).astype(y.dtype) * 0.0
        if self.shared_experts is not None:
            y = y + self.shared_experts(h)
        return y.reshape(*shape)


class ErnieDecoderLayer(nn.Module):
    def __init__(self, cfg: ErnieConfig, layer: int, dtype):
        super().__init__()
        self.layer = layer
        self.self_attn = ErnieAttention(cfg, dtype)
        self.mlp = (ErnieMoE(cfg, dtype) if cfg.is_moe_layer(layer)
                    else ErnieMLP(cfg.hidden_size, cfg.intermediate_size, cfg.use_bias, dtype))
        self.input_layernorm = ErnieRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps, dtype=dtype)
        self.post_attention_layernorm = ErnieRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps,
                                                   dtype=dtype)

    def forward(self, x, cos, sin, cache=None):  # (B, T, C)
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, self.layer)
        return x + self.mlp(self.post_attention_layernorm(x))

    def forward_packed(self, x, cos, sin, cu_seqlens, cache=None):  # (N, C)
        x = x + self.self_attn.forward_packed(self.input_layernorm(x), cos, sin, cu_seqlens,
                                              cache, self.layer)
        return x + self.mlp(self.post_attention_layernorm(x))

    def forward_step(self, x, cos, sin, cache, rows=None):  # (B, C)
        x = x + self.self_attn.forward_step(self.input_layernorm(x), cos, sin, cache,
                                            self.layer, rows)
        h = self.post_attention_layernorm(x)
        return x + (self.mlp.forward_rows(h) if isinstance(self.mlp, ErnieMLP)
                    else self.mlp(h))


class ErnieModel(nn.Module):
    """Embedding, the decoder layers and the final norm (``model.*`` in a checkpoint)."""

    def __init__(self, cfg: ErnieConfig, dtype):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size, dtype=dtype)
        self.layers = nn.ModuleList([ErnieDecoderLayer(cfg, i, dtype)
                                     for i in range(cfg.num_hidden_layers)])
        self.norm = ErnieRMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps, dtype=dtype)

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        """``model.model(ids)``: ``last_hidden_state`` as transformers' base model gives it
        (``ernie_hf_api.decoder_forward``; run by the language model holding this one)."""
        from .ernie_hf_api import decoder_forward

        return decoder_forward(self, input_ids, attention_mask, **kwargs)

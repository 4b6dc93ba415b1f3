"""``model(ids, attention_mask=m, position_ids=p)`` with a graph (round 30): training on a
padded batch at positions the user gives (a DPO/TRL collator's ``cumsum(mask) - 1``, or an
offset range), as transformers' forward runs it: every query sees the keys its row's 2-D
mask marks real, up to its own place in the row (the mask decides what is seen; the
positions only rotate the queries and keys, as transformers' sdpa/eager attention reads a
mask given with positions). A query with nothing to see (padding before a row's first
token) gets a zero attention output (never NaN, and no gradient reaches the real tokens
through it). Without a graph (``no_grad``, ``generate``) the cached path
(``ernie_masked_past``) runs instead.
"""

from __future__ import annotations

import numpy as np

__all__ = ["forward_masked_graph"]

_NO = -1e9  # the additive mask of a key a query may not see (exp underflows to 0)


def forward_masked_graph(model, input_ids, attention_mask, position_ids, states=None):
    """Logits (B, T, V), with a graph, of ``input_ids`` (B, T) under ``attention_mask``
    (B, T) at ``position_ids`` (B, T) or (1, T); a list ``states`` gets transformers'
    hidden states (the embeddings, each layer's output, the last after the norm)."""
    from ..core.tensor import Tensor
    from .ernie_masked_past import as_mask
    from .gpt import _as_index, _host

    ids = np.array(_host(input_ids), dtype=np.int64, ndmin=2)
    B, T = ids.shape
    mask = as_mask(attention_mask, B, T)
    pos = np.array(_host(position_ids), dtype=np.int64, ndmin=2)
    if pos.shape[0] == 1 and B > 1:  # transformers expands a single row of positions
        pos = np.broadcast_to(pos, (B, pos.shape[1]))
    if pos.shape != (B, T):
        raise ValueError(f"position_ids have shape {pos.shape}, the input ids {(B, T)}")
    if (pos < 0).any():
        raise ValueError("position_ids must be >= 0")
    if int(pos.max()) >= model.config.max_position_embeddings:
        raise ValueError(f"position {int(pos.max())} exceeds max_position_embeddings "
                         f"{model.config.max_position_embeddings}")
    seen = mask[:, None, :] & np.tril(np.ones((T, T), dtype=bool))[None]  # (B, T, S)
    xp = model.model.embed_tokens.weight.xp
    dtype = model.model.embed_tokens.weight.dtype
    bias = Tensor(xp.asarray(np.where(seen, 0.0, _NO).astype(dtype)[:, None, None]))
    keep = Tensor(xp.asarray(seen.any(-1).astype(dtype)[:, :, None]))  # (B, T, 1)
    cos, sin = model.rotary(pos.reshape(-1))
    cos = cos.reshape(B, T, 1, -1)
    sin = sin.reshape(B, T, 1, -1)
    x = model.model.embed_tokens(_as_index(ids, model))  # (B, T, C)
    held = [] if states is None else states
    held.append(x)
    for layer in model.model.layers:  # recomputed in backward under gradient checkpointing
        x = model._layer(layer, lambda h, layer=layer: _layer(layer, h, cos, sin, bias, keep), x)
        held.append(x)
    held[-1] = model.model.norm(x)
    return model.lm_head(held[-1])


def _layer(layer, x, cos, sin, bias, keep):
    """One decoder layer on x (B, T, C) under the additive ``bias`` (B, 1, 1, T, T);
    ``keep`` (B, T, 1) zeroes the attention output of queries with nothing to see."""
    from ..core.nn import functional as F

    B, T, _ = x.shape
    attn = layer.self_attn
    H, K, D = attn.H, attn.K, attn.D
    R = H // K
    h = layer.input_layernorm(x)
    q = F.rotary_embedding(attn.q_proj(h).reshape(B, T, H, D), cos, sin)
    k = F.rotary_embedding(attn.k_proj(h).reshape(B, T, K, D), cos, sin)
    v = attn.v_proj(h).reshape(B, T, K, D)
    q = q.reshape(B, T, K, R, D).transpose(0, 2, 3, 1, 4)  # (B, K, R, T, D)
    k = k.transpose(0, 2, 1, 3).reshape(B, K, 1, T, D).expand(B, K, R, T, D)
    v = v.transpose(0, 2, 1, 3).reshape(B, K, 1, T, D).expand(B, K, R, T, D)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=D ** -0.5)
    y = y.transpose(0, 3, 1, 2, 4).reshape(B, T, H * D) * keep
    x = x + attn.o_proj(y)
    return x + layer.mlp(layer.post_attention_layernorm(x))


def keep_real_router_rows(model, attention_mask) -> None:
    """Each MoE layer's router logits of the forward just run, of the real tokens only (the
    balancing loss counts no padding, as transformers' with the mask and skiff's padded
    forward)."""
    from .gpt import _host

    real = np.flatnonzero(np.asarray(_host(attention_mask)).reshape(-1) != 0)
    for layer in model.model.layers:
        logits = getattr(layer.mlp, "last_router_logits", None)
        if logits is not None and logits.shape[0] != len(real):
            layer.mlp.last_router_logits = logits[logits.xp.asarray(real)]


def lazy_masked_past(model, input_ids, attention_mask, position_ids):
    """A function giving the cache of this forward's positions (computed when first read,
    by the cached inference path: the graph path keeps no keys)."""
    from .ernie_past import forward_with_past
    from .gpt import _host

    ids, mask = np.array(_host(input_ids)), np.array(_host(attention_mask))
    pos = np.array(_host(position_ids))
    held = []

    def get():
        if not held:
            held.append(forward_with_past(model, ids, None, mask, pos)[1])
        return held[0]

    return get

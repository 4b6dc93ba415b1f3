"""A key/value cache with a padded batch (round 30): batched multi-turn chat, as a
transformers user runs it.

transformers keeps a padded batch's cache padded: (B, K, S, D) per layer, every position
stored (padding too), and each call passes the whole 2-D ``attention_mask`` (B, S) of the
cached and the new positions; a query sees the keys its mask marks real, up to its own
position. Where a token sits for the rotary embedding depends on the call:

* ``model(ids, attention_mask=m, past_key_values=c)`` without ``position_ids``: the new
  tokens are at ``c.get_seq_length() + arange(T)`` in every row (transformers' forward);
  ``position_ids`` given: those;
* ``generate(ids, attention_mask=m, ...)``: ``cumsum(m) - 1`` (padding at 0), the next
  token one past the row's last position (transformers' ``_prepare_position_ids`` and
  ``_update_model_kwargs``): the same tokens as each row alone.

:func:`forward_masked` runs new positions of a padded batch against a :class:`PastKeyValues`
(stored after the rotary embedding, as transformers stores them, so a ``DynamicCache`` goes
in and out), without a graph: inference. A query with no key to see (a padding position
before a row's first token) gets a zero attention output, never NaN, so nothing it leaves in
the cache can spoil the real tokens (they never attend to it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["forward_masked", "generate_positions", "as_mask", "needs_cache"]


def as_mask(mask, rows: int, width: int) -> np.ndarray:
    """The 2-D attention mask (rows, width) as bools, or one error naming the fix."""
    from .gpt import _host

    m = np.asarray(_host(mask))
    if m.ndim == 1:
        m = m[None]
    if m.shape != (rows, width):
        raise ValueError(f"attention_mask has shape {m.shape}: with past_key_values it covers "
                         f"the cached and the new positions, ({rows}, {width}) here")
    return m != 0


def generate_positions(mask: np.ndarray) -> np.ndarray:
    """transformers' generation positions of a padded batch: ``cumsum(mask) - 1``, padding
    at 0."""
    pos = np.cumsum(mask, axis=-1, dtype=np.int64) - 1
    pos[~mask] = 0
    return pos


def forward_masked(model, input_ids, cache, mask, positions, last_only: bool = False):
    """Logits (B, T, V) (``last_only``: (B, 1, V)) of ``input_ids`` (B, T) continuing
    ``cache`` (a :class:`~.ernie_past.PastKeyValues` holding S0 positions; these T are
    appended) under ``mask`` (B, S0 + T) bools and the tokens' rotary ``positions``
    (B, T)."""
    from ..core.tensor import Tensor, no_grad
    from .gpt import _as_index

    ids = np.asarray(input_ids, dtype=np.int64)
    B, T = ids.shape
    start = cache.length
    S = start + T
    if cache.batch_size is not None and cache.batch_size != B:
        raise ValueError(f"past_key_values hold {cache.batch_size} rows, input_ids {B}")
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (B, S):
        raise ValueError(f"attention_mask has shape {mask.shape}, expected {(B, S)} (the "
                         "cached and the new positions)")
    positions = np.broadcast_to(np.asarray(positions, dtype=np.int64), (B, T))
    if (positions < 0).any():
        raise ValueError("position_ids must be >= 0")
    if int(positions.max()) >= model.config.max_position_embeddings:
        raise ValueError(f"position {int(positions.max())} exceeds max_position_embeddings "
                         f"{model.config.max_position_embeddings}")
    if mask[:, -1].all() and (T == 1 and start or last_only and not start):
        # a decode step, or a first prompt's prefill (its real tokens packed): fused weights
        fast = _decode_fast if start else _prefill_fast
        logits = fast(model, ids, cache, mask, positions)
        if logits is not None:
            return logits
    causal = np.arange(S)[None, :] <= (start + np.arange(T))[:, None]  # (T, S)
    seen = mask[:, None, :] & causal[None]  # (B, T, S): which keys each query sees
    bias = np.where(seen, np.float32(0), np.float32(-np.inf))[:, None, None]  # (B,1,1,T,S)
    empty = ~seen.any(-1)  # (B, T): queries with nothing to see (padding)
    cos, sin = model.rotary(positions.reshape(-1))
    cos = cos.reshape(B, T, 1, -1)
    sin = sin.reshape(B, T, 1, -1)
    cache.reserve(S)
    with no_grad():
        x = model.model.embed_tokens(_as_index(ids, model))  # (B, T, C)
        for layer in model.model.layers:
            attn = layer.self_attn
            H, K, D = attn.H, attn.K, attn.D
            h = layer.input_layernorm(x)
            q = F_rotary(attn.q_proj(h).reshape(B, T, H, D), cos, sin)
            k = F_rotary(attn.k_proj(h).reshape(B, T, K, D), cos, sin)
            v = attn.v_proj(h).reshape(B, T, K, D)
            keys, values = cache.update(layer.layer, k.transpose(0, 2, 1, 3),
                                        v.transpose(0, 2, 1, 3))  # (B, K, S, D)
            y = _attend(q._data, keys._data, values._data, bias, empty, D ** -0.5)
            x = x + attn.o_proj(Tensor(y.astype(x.dtype, copy=False)))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        cache.length = S
        if last_only:
            x = x[:, -1:]
        return model.lm_head(model.model.norm(x))


def _decode_fast(model, ids, cache, mask, positions):
    """One new token per row on the fused inference weights (``ernie_infer.decode_step``,
    the padded keys masked out), or None when that path does not apply (a graph wanted,
    LoRA, non-float32 weights or cache)."""
    from ..core.tensor import Tensor, is_grad_enabled
    from .ernie_infer import decode_step, fast_path

    if is_grad_enabled() or any(not isinstance(a, np.ndarray) or a.dtype != np.float32
                                for a in (*cache.k, *cache.v)):
        return None
    weights = fast_path(model)
    if weights is None:
        return None
    B = ids.shape[0]
    start = cache.length
    cache.reserve(start + 1)
    cos, sin = model.rotary(positions.reshape(-1))
    logits = decode_step(model, weights, ids.reshape(-1), cache.k, cache.v,
                         np.full(B, start, dtype=np.int64), cos, sin, keymask=mask)
    cache.length = start + 1
    return Tensor(logits.reshape(B, 1, -1))


def _prefill_fast(model, ids, cache, mask, positions):
    """The last position's logits (B, 1, V) of a padded prompt into an empty cache, on the
    fused inference weights: each row's real tokens as one packed sequence (a real token
    sees the row's earlier real tokens, as under the mask), their keys and values stored at
    their columns, the padding's columns 0 (never seen). None when that path does not
    apply."""
    from ..core.tensor import Tensor, is_grad_enabled
    from .ernie_infer import fast_path, prefill

    if is_grad_enabled():
        return None
    weights = fast_path(model)
    if weights is None:
        return None
    B, T = ids.shape
    cols = [np.flatnonzero(row) for row in mask]
    cu = np.concatenate([[0], np.cumsum([len(c) for c in cols])]).astype(np.int64)
    tokens = np.concatenate([ids[b, c] for b, c in enumerate(cols)])
    cos, sin = model.rotary(np.concatenate([positions[b, c] for b, c in enumerate(cols)]))
    cache.reserve(T)

    def store(layer, k, v):
        for held, new in ((cache.k, k), (cache.v, v)):
            if held[layer] is None or held[layer].shape[0] != B:
                held[layer] = np.zeros((B, new.shape[1], cache.capacity, new.shape[2]),
                                       dtype=np.float32)
            else:
                held[layer][:, :, :T] = 0
            for b, c in enumerate(cols):
                held[layer][b, :, c] = new[cu[b]:cu[b + 1]]

    logits = prefill(model, weights, tokens, cu, cos, sin, store, last_only=True)
    cache.length = T
    return Tensor(np.asarray(logits).reshape(B, 1, -1))


def F_rotary(x, cos, sin):  # noqa: N802 (the functional's name)
    from ..core.nn import functional as F

    return F.rotary_embedding(x, cos, sin)


def _attend(q, k, v, bias, empty, scale):
    """softmax(q k^T scale + bias) v per (row, kv head, query head of the group): q
    (B, T, H, D), k/v (B, K, S, D) -> (B, T, H*D) float32; rows in ``empty`` give 0."""
    B, T, H, D = q.shape
    K = k.shape[1]
    q = np.asarray(q, np.float32).reshape(B, T, K, H // K, D).transpose(0, 2, 3, 1, 4)
    k = np.asarray(k, np.float32)[:, :, None]  # (B, K, 1, S, D)
    v = np.asarray(v, np.float32)[:, :, None]
    att = (q * np.float32(scale)) @ k.swapaxes(-1, -2) + bias  # (B, K, R, T, S)
    top = att.max(-1, keepdims=True)
    top[~np.isfinite(top)] = 0
    att = np.exp(att - top)
    total = att.sum(-1, keepdims=True)
    total[total == 0] = 1  # a query that sees nothing: all weights 0, output 0
    y = (att / total) @ v  # (B, K, R, T, D)
    y[np.broadcast_to(empty[:, None, None, :, None], y.shape)] = 0
    return y.transpose(0, 3, 1, 2, 4).reshape(B, T, H * D)


def needs_cache(mask: np.ndarray, past, returned: bool = False) -> bool:
    """Whether ``generate`` runs a padded batch on a padded cache: when it continues a cache,
    returns one (``return_dict_in_generate``: transformers' ``out.past_key_values``, for the
    next turn), or the mask has padding between tokens (a second turn appended to a padded
    first); plain left or right padding otherwise takes the packed path (no padding
    computed)."""
    if mask.all():
        return False
    if past is not None or returned:
        return True
    first = mask.argmax(-1)
    last = mask.shape[1] - 1 - mask[:, ::-1].argmax(-1)
    real = mask.sum(-1)
    return bool((real > 0).all() and (last - first + 1 != real).any())

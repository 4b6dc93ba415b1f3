"""``model(ids, output_attentions=True)``: transformers' attention weights of ERNIE-4.5.

``attentions`` is a tuple of ``num_hidden_layers`` tensors (B, H, T, T), as transformers'
eager attention returns them: ``softmax(q k^T / sqrt(D))`` under the causal mask, query
head ``h`` reading key/value head ``h // (H / K)``. They are graph tensors (a loss on them
has gradients). The model's own attention never builds these (T, T) probabilities on the
fast paths, so they are computed beside it, from each layer's input (the hidden states of
``ernie_hidden``): the layer's norm, its ``q_proj`` / ``k_proj`` and the rotary embedding.
With a padded ``attention_mask`` each row's real tokens attend to its real tokens (their
positions counted from the row's first token, which the rotary embedding makes the same
weights as transformers' offset positions); padded keys get 0, and a padded query's whole
row is 0 (transformers fills those rows with what its mask makes of a row with nothing to
attend to).
"""

from __future__ import annotations

import numpy as np

from ..core.nn import functional as F
from ..core.tensor import Tensor

__all__ = ["forward_attentions"]

_NO = -1e9  # the additive mask of a key a query may not see (exp underflows to 0)


def forward_attentions(model, input_ids, attention_mask=None, holes: bool = False):
    """``(logits, hidden_states, attentions)`` of ``input_ids`` (B, T); ``holes`` as
    :func:`~.ernie_hidden.forward_hidden`'s (a token masked inside a row: generate's
    positions)."""
    from .ernie_generate import _kept, _mask_rows, has_hole, mask_columns
    from .ernie_hidden import forward_hidden

    logits, states = forward_hidden(model, input_ids, attention_mask, holes=holes)
    B, T = logits.shape[0], logits.shape[1]
    if attention_mask is not None and not holes and has_hole(attention_mask, input_ids):
        # a forward's hole (forward_hidden): every query at its column sees the real keys
        real = _kept(attention_mask, input_ids)
        see = np.tril(np.ones((T, T), dtype=bool))[None] & real[:, None, :]
        return logits, states, _all_weights(model, states, np.broadcast_to(np.arange(T), (
            B, T)), see, see.any(-1)[:, None, :, None])
    rows = None
    if attention_mask is not None:
        rows = mask_columns(attention_mask, input_ids) if holes else \
            _mask_rows(attention_mask, input_ids)
        if rows is not None and not holes:
            rows = [np.arange(a, e) for a, e in rows]
    rows = rows or [np.arange(T)] * B
    real = np.zeros((B, T), dtype=bool)
    positions = np.zeros((B, T), dtype=np.int64)
    for b, c in enumerate(rows):
        real[b, c] = True
        positions[b, c] = np.arange(len(c))
    see = np.tril(np.ones((T, T), dtype=bool))[None] & real[:, None, :] & real[:, :, None]
    return logits, states, _all_weights(model, states, positions, see,
                                        real[:, None, :, None])  # padded queries: 0


def _all_weights(model, states, positions, see, keep):
    """Each layer's weights from its input state, the queries and keys at ``positions``
    (B, T), a query seeing the keys ``see`` (B, T, T) marks, ``keep`` (B, 1, T, 1) zeroing
    the queries left out."""
    B, T = positions.shape
    cos, sin = model.rotary(np.asarray(positions).reshape(-1))
    half = cos.shape[-1]
    cos, sin = cos.reshape(B, T, 1, half), sin.reshape(B, T, 1, half)
    add = np.where(see, 0.0, _NO).astype(np.float32)[:, None]          # (B, 1, T, T)
    xp = model.model.embed_tokens.weight.xp
    add, keep = xp.asarray(add), xp.asarray(np.asarray(keep, dtype=np.float32))
    return tuple(_weights(layer, x, cos, sin, add, keep)
                 for layer, x in zip(model.model.layers, states))


def _weights(layer, x, cos, sin, add, keep):
    """One layer's (B, H, T, T) probabilities from its input ``x`` (B, T, C)."""
    attn = layer.self_attn
    B, T, _ = x.shape
    H, K, D = attn.H, attn.K, attn.D
    h = layer.input_layernorm(x)
    q = F.rotary_embedding(attn.q_proj(h).reshape(B, T, H, D), cos, sin)
    k = F.rotary_embedding(attn.k_proj(h).reshape(B, T, K, D), cos, sin)
    R = H // K
    q = q.reshape(B, T, K, R, D).transpose(0, 2, 3, 1, 4)                # (B, K, R, T, D)
    k = k.transpose(0, 2, 3, 1).reshape(B, K, 1, D, T)                   # (B, K, 1, D, T)
    scores = (q @ k).reshape(B, H, T, T) * (D ** -0.5)
    scores = scores + Tensor(add)
    return F.softmax(scores, axis=-1) * Tensor(keep)

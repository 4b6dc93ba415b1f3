"""``model(ids, output_hidden_states=True)``: transformers' hidden states of ERNIE-4.5.

``hidden_states`` is a tuple of ``num_hidden_layers + 1`` tensors (B, T, C), as transformers
returns them: the embeddings, then each decoder layer's output, the last one after the final
norm (the states the head reads). They are graph tensors (a loss on them has gradients).
With a padded ``attention_mask`` the real tokens run as one packed stream (as the padded
forward does) and the padded positions are 0 (transformers computes values there that no
real token reads).
"""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor, cat

__all__ = ["forward_hidden"]


def forward_hidden(model, input_ids, attention_mask=None, holes: bool = False):
    """``(logits (B, T, V), hidden_states)`` of ``input_ids`` (B, T). ``holes``: a mask
    may mask tokens inside a row (``generate``'s positions, ``cumsum(mask) - 1``: the real
    tokens packed); else a forward's (the columns' positions): left or right padding runs
    packed (padded positions 0), a hole every column under the mask (transformers'
    values at the hole too)."""
    from .ernie_generate import _mask_rows, has_hole, mask_columns
    from .gpt import _as_index, _host

    if attention_mask is not None and not holes and has_hole(attention_mask, input_ids):
        # a forward's hole: every column at its own position, as transformers' forward
        from .ernie_masked_graph import forward_masked_graph

        states = []
        width = np.asarray(_host(attention_mask)).shape[-1]
        logits = forward_masked_graph(model, input_ids, attention_mask,
                                      np.arange(width)[None], states)
        return logits, tuple(states)
    rows = None
    if attention_mask is not None:
        rows = mask_columns(attention_mask, input_ids) if holes else \
            _mask_rows(attention_mask, input_ids)
        if rows is not None and not holes:
            rows = [np.arange(a, e) for a, e in rows]
    if rows is not None:
        return _padded(model, np.asarray(_host(input_ids), dtype=np.int64), rows)
    idx = _as_index(input_ids, model)
    if idx.ndim == 1:
        idx = idx.reshape(1, -1)
    T = idx.shape[1]
    if T > model.config.max_position_embeddings:
        raise ValueError(f"sequence length {T} exceeds max_position_embeddings "
                         f"{model.config.max_position_embeddings}")
    cos, sin = model.rotary(np.arange(T))
    x = model.model.embed_tokens(idx)
    states = [x]
    for layer in model.model.layers:
        x = model._layer(layer, layer.forward, x, cos, sin)
        states.append(x)
    states[-1] = model.model.norm(x)
    return model.lm_head(states[-1]), tuple(states)


def _padded(model, ids, rows):
    """``rows``: each row's real columns."""
    ids = ids.reshape(len(rows), -1)
    B, T = ids.shape
    tokens = np.concatenate([ids[b, c] for b, c in enumerate(rows)])
    lengths = np.array([len(c) for c in rows], dtype=np.int64)
    cu = np.concatenate([[0], np.cumsum(lengths)])
    positions = np.concatenate([np.arange(n) for n in lengths])
    cos, sin = model.rotary(positions)
    from .gpt import _as_index

    x = model.model.embed_tokens(_as_index(tokens, model))
    states = [x]
    for layer in model.model.layers:
        x = model._layer(layer, layer.forward_packed, x, cos, sin, cu)
        states.append(x)
    states[-1] = model.model.norm(x)
    where = np.full((B, T), len(tokens), dtype=np.int64)  # row N: the zeros
    for b, c in enumerate(rows):
        where[b, c] = cu[b] + np.arange(len(c))

    def unpack(packed):
        zero = Tensor(packed.xp.zeros((1, packed.shape[1]), dtype=packed.dtype))
        return cat([packed, zero], axis=0)[packed.xp.asarray(where.reshape(-1))] \
            .reshape(B, T, packed.shape[1])

    hidden = tuple(unpack(s) for s in states)
    return model.lm_head(hidden[-1]), hidden

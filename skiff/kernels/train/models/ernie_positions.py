"""``model(input_ids, position_ids=...)``: transformers' packed-sequence rows for ERNIE-4.5.

transformers' ``DataCollatorWithFlattening`` packs several examples into one row and gives
``position_ids`` that restart at each example (``[[0, 1, 2, 0, 1, 0, 1, 2, 3]]``) and labels
of -100 at each example's first token. transformers 5 reads a restart (two neighbours whose
positions do not differ by 1) as a sequence boundary when no ``attention_mask`` and no cache
are given: each example attends to itself only. skiff runs those segments as one packed
stream (:meth:`~.ernie.ErnieForCausalLM.forward_packed`, no padding, a graph when training),
each token rotated by its given position, and lays the logits out as (B, T, V).
"""

from __future__ import annotations

import numpy as np

__all__ = ["forward_positions"]


def forward_positions(model, input_ids, position_ids):
    """Logits (B, T, V) of ``input_ids`` (B, T) with ``position_ids`` (B, T) or (1, T)."""
    from .gpt import _host

    ids = np.asarray(_host(input_ids), dtype=np.int64)
    if ids.ndim == 1:
        ids = ids[None]
    pos = np.asarray(_host(position_ids), dtype=np.int64)
    if pos.ndim == 1:
        pos = pos[None]
    B, T = ids.shape
    if pos.shape[0] == 1 and B > 1:  # transformers expands a single row of positions
        pos = np.broadcast_to(pos, (B, T))
    if pos.shape != (B, T):
        raise ValueError(f"position_ids have shape {pos.shape}, the input ids {(B, T)}")
    if (pos < 0).any():
        raise ValueError("position_ids must be >= 0")
    starts = [0] + [b * T + t for b in range(B) for t in range(T)
                    if t == 0 and b > 0 or t > 0 and pos[b, t] - pos[b, t - 1] != 1]
    cu = np.array(sorted(set(starts)) + [B * T], dtype=np.int64)
    logits = model.forward_packed(ids.reshape(-1), cu, pos.reshape(-1))  # (B*T, V)
    return logits.reshape(B, T, logits.shape[-1])

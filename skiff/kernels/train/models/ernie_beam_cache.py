"""The cache a beam search returns (round 30b): transformers' ``generate(num_beams=N,
return_dict_in_generate=True).past_key_values`` is its cache after the last step, one row
per running beam (B * N rows, in the running beams' order after that step's reordering),
holding the prompt (its padding too) and every generated token but the last (the last is
never fed). Beam search keeps a :class:`~.ernie_generate.PackedKVCache` (each row's real
tokens first); this lays it out as transformers' padded one: a row's prompt tokens at their
columns, the generated ones from the prompt's width on, padding columns 0 (never seen).
"""

from __future__ import annotations

import numpy as np

__all__ = ["beam_past", "prefill_past"]


def beam_past(model, cache, spans, width: int, length: int, num_beams: int):
    """A :class:`~.ernie_past.PastKeyValues` of ``length`` positions from the beam search's
    ``cache`` (rows already in the running beams' order); ``spans``: each prompt's real
    columns (an int array) in the padded ``width``."""
    from .ernie_generate import _host
    from .ernie_past import PastKeyValues

    past = PastKeyValues(len(cache.k), length)
    rows = len(cache.lengths)
    fed = length - width  # generated tokens in the cache
    for layer, (k, v) in enumerate(zip(cache.k, cache.v)):
        k, v = np.asarray(_host(k), np.float32), np.asarray(_host(v), np.float32)
        out_k = np.zeros((rows, k.shape[1], past.capacity, k.shape[3]), np.float32)
        out_v = np.zeros_like(out_k)
        for r in range(rows):
            cols = spans[r // num_beams]
            n = len(cols)
            out_k[r][:, cols], out_v[r][:, cols] = k[r, :, :n], v[r, :, :n]
            out_k[r, :, width:length] = k[r, :, n:n + fed]
            out_v[r, :, width:length] = v[r, :, n:n + fed]
        past.k[layer], past.v[layer] = out_k, out_v
    past.length = length
    return past


def prefill_past(model, past, ids, spans, capacity: int, num_beams: int):
    """Beam search that continues a cache (round 39; transformers reads the cache its user
    expanded with ``batch_repeat_interleave(num_beams)``): ``(logits (B, V), packed
    cache)`` for the prompts ``ids`` (B, T) whose first ``past.length`` columns ``past``
    holds (a :class:`~.ernie_past.PastKeyValues` or a transformers cache, of B rows or of
    B * ``num_beams`` rows, each prompt's beams alike: row ``b * num_beams`` is read). Only
    the columns after the cache are run (``ernie_masked_past.forward_masked``, each row's
    real ``spans`` masked in), then each row's real columns are packed first into a
    :class:`~.ernie_generate.PackedKVCache` of ``capacity`` positions, as a fresh prefill
    lays them out. The user's cache is left as it was. None where this path does not apply
    (a row whose last column is padding, weights off the host or not float32): the caller
    runs the whole prompt."""
    from .ernie_generate import PackedKVCache, _host
    from .ernie_masked_past import forward_masked, generate_positions
    from .ernie_past import PastKeyValues, as_past

    B, T = ids.shape
    weight = model.model.embed_tokens.weight._data
    if not isinstance(weight, np.ndarray) or weight.dtype != np.float32:
        return None
    cache, _ = as_past(model, past)
    held, rows = cache.length, cache.batch_size
    if rows is None or held == 0:
        return None
    if held >= T:
        raise ValueError(f"past_key_values hold {held} positions and input_ids {T}: "
                         "input_ids must be the whole sequence, longer than the cache (the "
                         "cache holds its first positions)")
    if rows not in (B, B * num_beams):
        raise ValueError(f"past_key_values hold {rows} rows: beam search on a cache takes "
                         f"one row per prompt ({B}) or one per beam ({B * num_beams}, "
                         "transformers' cache.batch_repeat_interleave(num_beams))")
    mask = np.zeros((B, T), dtype=bool)
    for b, cols in enumerate(spans):
        mask[b, cols] = True
    if not mask[:, -1].all():
        return None
    pick = np.arange(B) * (rows // B)
    own = PastKeyValues(len(cache.k), T)
    for store, held_store in ((own.k, cache.k), (own.v, cache.v)):
        for layer, a in enumerate(held_store):
            grown = np.zeros(a.shape[1:2] + (T,) + a.shape[3:], np.float32)[None].repeat(B, 0)
            grown[:, :, :held] = a[pick, :, :held]
            store[layer] = grown
    own.length = held
    positions = generate_positions(mask)[:, held:]
    logits = forward_masked(model, ids[:, held:], own, mask, positions, last_only=True)
    lengths = np.array([len(c) for c in spans], dtype=np.int64)
    packed = PackedKVCache(len(own.k), lengths, capacity)
    for store, padded in ((packed.k, own.k), (packed.v, own.v)):
        for layer, a in enumerate(padded):
            out = np.zeros((B, a.shape[1], capacity, a.shape[3]), np.float32)
            for b, cols in enumerate(spans):
                out[b, :, :len(cols)] = a[b][:, cols]
            store[layer] = out
    return np.asarray(_host(logits._data), np.float32).reshape(B, -1), packed

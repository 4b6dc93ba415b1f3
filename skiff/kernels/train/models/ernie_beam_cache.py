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

__all__ = ["beam_past"]


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

"""``past_key_values`` as a transformers user passes them (round 29): a forward that continues
cached positions, and a ``generate`` that continues a chat turn by turn without running the
conversation again.

* ``out = model(ids, use_cache=True)`` (or plain ``model(ids)``, transformers' default)
  has ``out.past_key_values``: a :class:`PastKeyValues` (skiff's :class:`KVCache`, read as
  transformers' ``DynamicCache``: ``get_seq_length()``, ``len()``, ``cache[layer]`` =
  ``(keys, values)`` (B, K, S, D) after the rotary embedding, as transformers stores them,
  ``crop``, ``to_legacy_cache``);
* ``model(next_ids, past_key_values=cache)`` gives the logits of ``next_ids`` at positions
  ``cache.get_seq_length()`` on, and appends their keys and values to ``cache`` (in place,
  as transformers' cache grows);
* ``model.generate(ids, past_key_values=cache)``: ``ids`` is the whole conversation, of
  which ``cache`` holds the first positions (transformers' rule); only the rest is run.
  ``return_dict_in_generate=True`` returns the cache as ``out.past_key_values``.

A transformers ``DynamicCache`` (or the legacy tuple of ``(keys, values)`` per layer) is
taken too: its arrays are read, and a ``DynamicCache`` gets the new positions appended in
place, so a cache can go from one library to the other. A cached forward runs without a
graph (inference: no gradient flows into the cached keys); a padded ``attention_mask``
(the cached and the new positions) runs on a padded cache (``ernie_masked_past``, round 30).
"""

from __future__ import annotations

import numpy as np

from .ernie_cache import KVCache

__all__ = ["PastKeyValues", "as_past", "forward_with_past", "lazy_past", "check_mask"]


class PastKeyValues(KVCache):
    """skiff's key/value cache, also read as transformers' ``DynamicCache``; it grows (by
    doubling) when a call needs more positions than it holds."""

    def __init__(self, num_layers: int, capacity: int = 0):
        super().__init__(num_layers, max(int(capacity), 1))

    def reserve(self, n: int) -> None:
        """Room for ``n`` positions in every layer (the stored ones kept)."""
        if n <= self.capacity:
            return
        cap = max(int(n), 2 * self.capacity)
        for store in (self.k, self.v):
            for i, a in enumerate(store):
                if a is not None:
                    grown = np.empty(a.shape[:2] + (cap,) + a.shape[3:], dtype=a.dtype)
                    grown[:, :, :self.length] = a[:, :, :self.length]
                    store[i] = grown
        self.capacity = cap

    def update(self, layer, k, v):
        self.reserve(self.length + k.shape[2])
        return super().update(layer, k, v)

    # ---- transformers' DynamicCache, read side ---------------------------------------------
    def get_seq_length(self, layer_idx: int = 0) -> int:
        return int(self.length)

    def __len__(self) -> int:
        return len(self.k)

    def __getitem__(self, layer: int):
        if self.k[layer] is None:
            raise IndexError(f"layer {layer} holds nothing yet")
        return self.k[layer][:, :, :self.length], self.v[layer][:, :, :self.length]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def to_legacy_cache(self) -> tuple:
        return tuple((k.copy(), v.copy()) for k, v in self)

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` positions (negative: drop that many), as
        transformers' ``crop``."""
        n = self.length + max_length if max_length < 0 else max_length
        self.length = max(0, min(self.length, int(n)))

    def batch_select_indices(self, indices) -> None:
        """Keep the rows ``indices`` (in that order), as transformers' cache method: e.g.
        each prompt's best beam of a beam search's cache (rows ``b * num_beams``)."""
        from .gpt import _host

        idx = np.asarray(_host(indices), dtype=np.int64).reshape(-1)
        rows = self.batch_size
        if rows is not None and len(idx) and (idx.min() < -rows or idx.max() >= rows):
            raise IndexError(f"indices {idx.tolist()} out of the cache's {rows} rows")
        for store in (self.k, self.v):
            for i, a in enumerate(store):
                if a is not None:
                    store[i] = a[idx]

    reorder_cache = batch_select_indices  # transformers' name for a beam reordering

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Each row ``repeats`` times in a row, as transformers' cache method."""
        self.batch_select_indices(np.repeat(np.arange(self.batch_size or 0), int(repeats)))

    @property
    def batch_size(self) -> int | None:
        return None if self.k[0] is None else int(self.k[0].shape[0])

    def __repr__(self) -> str:
        return f"PastKeyValues(layers={len(self)}, length={self.length})"


def _arrays(past) -> list[tuple]:
    """[(keys, values)] per layer of a transformers cache or a legacy tuple, as numpy."""
    def host(a):
        a = a.detach().cpu().float().numpy() if hasattr(a, "detach") else np.asarray(a)
        return np.ascontiguousarray(a, dtype=np.float32)

    if hasattr(past, "layers"):  # transformers 5's Cache
        return [(host(layer.keys), host(layer.values)) for layer in past.layers
                if getattr(layer, "keys", None) is not None and layer.keys.numel()]
    return [(host(k), host(v)) for k, v in past]


def as_past(model, past):
    """``(cache, target)``: the :class:`PastKeyValues` to run with and the transformers cache
    to append the new positions to afterwards (None when ``past`` is skiff's own)."""
    layers = len(model.model.layers)
    if past is None:
        return PastKeyValues(layers), None
    if isinstance(past, PastKeyValues):
        return past, None
    if isinstance(past, KVCache):
        raise TypeError("past_key_values: a generation KVCache; pass the cache a call "
                        "returned (out.past_key_values) or a transformers DynamicCache")
    if not (hasattr(past, "get_seq_length") or isinstance(past, (tuple, list))):
        raise TypeError(f"past_key_values must be a cache a call returned "
                        f"(out.past_key_values), a transformers DynamicCache or a tuple of "
                        f"(keys, values) per layer, got {type(past).__name__}")
    arrays = _arrays(past)
    cache = PastKeyValues(layers)
    if arrays:
        if len(arrays) != layers:
            raise ValueError(f"past_key_values hold {len(arrays)} layers, the model has "
                             f"{layers}")
        length = arrays[0][0].shape[2]
        cache.reserve(length)
        for i, (k, v) in enumerate(arrays):
            cache.k[i] = np.empty(k.shape[:2] + (cache.capacity,) + k.shape[3:], np.float32)
            cache.v[i] = np.empty_like(cache.k[i])
            cache.k[i][:, :, :length] = k
            cache.v[i][:, :, :length] = v
        cache.length = length
    return cache, (past if hasattr(past, "update") and hasattr(past, "layers") else None)


def write_back(cache: PastKeyValues, target, start: int) -> None:
    """Append positions ``start..cache.length`` to a transformers cache, in place."""
    if target is None or cache.length <= start:
        return
    import torch

    for i, (k, v) in enumerate(cache):
        target.update(torch.from_numpy(k[:, :, start:].copy()),
                      torch.from_numpy(v[:, :, start:].copy()), i)


def check_mask(mask, rows: int) -> None:
    """An ``attention_mask`` beside a cache must mark every position real."""
    if mask is None:
        return
    m = np.asarray(mask.detach().cpu().numpy() if hasattr(mask, "detach") else
                   getattr(mask, "_data", mask))
    if m.size and not (m != 0).all():
        raise ValueError("past_key_values with a padded attention_mask is not supported: "
                         "continue unpadded rows (one conversation, or rows of one length)")
    if m.ndim == 2 and m.shape[0] != rows:
        raise ValueError(f"attention_mask has {m.shape[0]} rows, input_ids {rows}")


def forward_with_past(model, input_ids, past, attention_mask=None, position_ids=None):
    """Logits (B, T, V) of ``input_ids`` continuing ``past`` (see the module); the result's
    ``past_key_values`` is the cache, now holding these positions too. A padded
    ``attention_mask`` (B, cached + T) or ``position_ids`` (B, T) run as transformers'
    forward runs them (``ernie_masked_past``)."""
    from ..core.tensor import Tensor, no_grad
    from .gpt import _host

    ids = np.array(_host(input_ids), dtype=np.int64, ndmin=2)
    B, T = ids.shape
    if T == 0:
        raise ValueError("input_ids are empty: give at least one new token to continue "
                         "the cache")
    cache, target = as_past(model, past)
    if cache.batch_size is not None and cache.batch_size != B:
        raise ValueError(f"past_key_values hold {cache.batch_size} rows, input_ids {B}")
    start = cache.length
    keymask = None
    if attention_mask is not None or position_ids is not None:
        from .ernie_masked_past import as_mask

        keymask = (np.ones((B, start + T), bool) if attention_mask is None
                   else as_mask(attention_mask, B, start + T))
        if keymask.all() and position_ids is None:
            keymask = None
    cache.reserve(start + T)
    if keymask is not None:  # transformers' forward: positions after the cache's
        from .ernie_masked_past import forward_masked

        places = start + np.arange(T)[None] if position_ids is None else \
            np.array(_host(position_ids), dtype=np.int64, ndmin=2)
        if places.shape[1] != T:
            raise ValueError(f"position_ids have {places.shape[1]} positions, input_ids {T}")
        logits = forward_masked(model, ids, cache, keymask, places)
        write_back(cache, target, start)
        return Tensor(logits._data), (target if target is not None else cache)
    with no_grad():
        logits = model.forward(ids, cache)
    write_back(cache, target, start)
    out = Tensor(logits._data)
    return out, (target if target is not None else cache)


def lazy_past(model, input_ids, attention_mask):
    """A function giving the cache of ``input_ids`` (run again with a cache when first
    read; the plain forward keeps no keys)."""
    held = []

    def get():
        if not held:
            held.append(forward_with_past(model, input_ids, None, attention_mask)[1])
        return held[0]

    return get

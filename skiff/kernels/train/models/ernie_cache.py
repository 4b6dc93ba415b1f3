"""The key/value cache of ERNIE-4.5's generation (``ernie.KVCache``, kept in a file of its
own so that generation helpers can use it without importing the model's module)."""

from __future__ import annotations

from ..core.tensor import Tensor

__all__ = ["KVCache"]


class KVCache:
    """Keys and values of past positions, per layer: (B, K, S, D) arrays that grow in place
    up to ``capacity`` positions (no copy of the past per new token)."""

    def __init__(self, num_layers: int, capacity: int):
        self.capacity = int(capacity)
        self.k: list = [None] * num_layers
        self.v: list = [None] * num_layers
        self.length = 0  # positions stored (the same in every layer after a forward)

    def update(self, layer: int, k: Tensor, v: Tensor):
        xp = k.xp
        B, K, T, D = k.shape
        if self.k[layer] is None:
            self.k[layer] = xp.empty((B, K, self.capacity, D), dtype=k.dtype)
            self.v[layer] = xp.empty((B, K, self.capacity, D), dtype=v.dtype)
        start = self.length
        if start + T > self.capacity:
            raise ValueError(f"KV cache full: {start} + {T} positions > capacity "
                             f"{self.capacity}")
        self.k[layer][:, :, start:start + T] = k._data
        self.v[layer][:, :, start:start + T] = v._data
        return (Tensor(self.k[layer][:, :, :start + T]),
                Tensor(self.v[layer][:, :, :start + T]))

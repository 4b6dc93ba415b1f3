"""The token data and skiff models of ``test_grad_accum_tokens_r30c.py`` without torch: the
2-rank script ``parallel/scripts/accum_tokens_r30c_check.py`` imports them, and importing the
test module brought torch into each rank (about 1.8 CPU s a rank; round 40, h6)."""

from __future__ import annotations

import numpy as np

from skiff import nn
from skiff.kernels.train.data import PackedBatch

V, D, T = 11, 6, 7


def token_data(rows=12, seed=0):
    """Next-token style targets with most rows scored on a few tokens only (chat data)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, V, (rows, T))
    y = rng.integers(0, V, (rows, T))
    scored = rng.integers(1, T + 1, rows)  # 1 .. T scored targets per row, at the end
    scored[::3] = 1
    for i, k in enumerate(scored):
        y[i, :T - k] = -100
    return x.astype("i8"), y.astype("i8")


class TokenModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.out = nn.Linear(D, V)

    def forward(self, x):
        return self.out(self.emb(x).tanh())


class PackedModel(TokenModel):
    """A model with its own loss over packed chat sequences (the token mean)."""

    def loss(self, batch):
        from skiff.kernels.train.core.nn import functional as F

        return F.cross_entropy(self.forward(batch.tokens), batch.targets)


class PackedRows:
    """Rows of (tokens, targets) that collate into one PackedBatch."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def collate(self, items):
        cu = np.arange(len(items) + 1, dtype="i8") * T
        return PackedBatch(np.concatenate([a for a, _ in items]),
                           np.concatenate([b for _, b in items]), cu,
                           np.tile(np.arange(T, dtype="i8"), len(items)))

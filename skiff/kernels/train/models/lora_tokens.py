"""peft's trainable tokens beside LoRA: ``apply_lora(model, ..., trainable_token_indices=[
ids])`` trains the embedding rows of those tokens (new special tokens, typically) while the
rest of the table stays frozen, as ``peft.LoraConfig(trainable_token_indices=[...])`` does.

:class:`TokenAdapter` holds ``trainable_tokens_delta`` (n, C): the rows themselves, not a
difference (peft's name; they start as the current rows and replace them). The embedding
becomes a :class:`TrainableTokensEmbedding` (lookup of the frozen table, the adapted tokens'
positions taken from the delta); with tied embeddings the head becomes a
:class:`TrainableTokensHead` sharing the same adapter (those tokens' logits from the delta),
as peft ties its head adapter. An untied head is not adapted (peft's default). The state
dict names are peft's (``model.embed_tokens.token_adapter.trainable_tokens_delta``); merged,
the rows are written into the table (``merged_rows``).
"""

from __future__ import annotations

import numpy as np

from ..core import nn
from ..core.nn import Parameter
from ..core.nn import functional as F

__all__ = ["TokenAdapter", "TrainableTokensEmbedding", "TrainableTokensHead",
           "apply_trainable_tokens", "token_adapter", "merged_rows", "remove_trainable_tokens"]


def _host(x):
    data = getattr(x, "_data", x)
    return np.asarray(data.get() if hasattr(data, "get") else data)


class TokenAdapter(nn.Module):
    """The trained rows (``trainable_tokens_delta`` (n, C)) of ``token_indices``."""

    def __init__(self, indices, table: np.ndarray):
        super().__init__()
        self.token_indices = np.asarray(indices, dtype=np.int64)
        self.trainable_tokens_delta = Parameter(np.array(table[self.token_indices]),
                                                dtype=table.dtype)
        # token id -> its row in the delta + 1 (0: not adapted)
        self.slot = np.zeros(table.shape[0], dtype=np.int64)
        self.slot[self.token_indices] = np.arange(1, len(self.token_indices) + 1)


class TrainableTokensEmbedding(nn.Module):
    """A frozen embedding whose adapted tokens read their rows from the adapter."""

    def __init__(self, base: nn.Embedding, indices):
        super().__init__()
        self.num_embeddings, self.embedding_dim = base.num_embeddings, base.embedding_dim
        self.padding_idx = getattr(base, "padding_idx", None)
        self.weight = base.weight
        self.token_adapter = TokenAdapter(indices, _host(base.weight))

    disabled = False  # peft's disable_adapter: the table's own rows

    def forward(self, idx):
        out = F.embedding(idx, self.weight)
        if self.disabled:
            return out
        ids = _host(idx).astype(np.int64)
        slot = self.token_adapter.slot[ids]
        hit = slot > 0
        if not hit.any():
            return out
        xp = out.xp  # numpy, or cupy for a model on the GPU
        rows = F.embedding(xp.asarray(np.maximum(slot - 1, 0)),
                           self.token_adapter.trainable_tokens_delta)
        mask = xp.asarray(hit[..., None].astype(out.dtype))
        return out * (1 - mask) + rows * mask

    def extra_repr(self) -> str:
        return (f"{self.num_embeddings}, {self.embedding_dim}, trainable tokens "
                f"{self.token_adapter.token_indices.tolist()}")


class TrainableTokensHead(nn.Module):
    """A tied head: the adapted tokens' logits come from the shared adapter's rows."""

    def __init__(self, base: nn.Linear, adapter: TokenAdapter):
        super().__init__()
        self.in_features, self.out_features = base.in_features, base.out_features
        self.weight, self.bias = base.weight, base.bias
        self._tied = [adapter]  # a list: not a child (its parameter is the embedding's)

    disabled = False  # peft's disable_adapter: the tied table's own logits

    def forward(self, x):
        adapter = self._tied[0]
        y = F.linear(x, self.weight, self.bias)
        if self.disabled:
            return y
        idx = adapter.token_indices
        V = self.out_features
        keep = np.ones(V, dtype=np.float32)
        keep[idx] = 0
        put = np.zeros((len(idx), V), dtype=np.float32)  # delta column j -> vocabulary idx[j]
        put[np.arange(len(idx)), idx] = 1
        z = F.linear(x, adapter.trainable_tokens_delta,
                     None if self.bias is None else self.bias[self.bias.xp.asarray(idx)])
        xp = y.xp
        return y * xp.asarray(keep.astype(y.dtype)) + z @ xp.asarray(put.astype(y.dtype))


def apply_trainable_tokens(model, indices) -> None:
    """Adapt the rows of ``indices`` (see the module docstring)."""
    emb = model.model.embed_tokens
    if not isinstance(emb, nn.Embedding):
        raise ValueError("trainable_token_indices: the embedding is adapted already")
    idx = np.asarray(list(indices), dtype=np.int64).reshape(-1)
    V = emb.num_embeddings
    if idx.size == 0 or len(set(idx.tolist())) != idx.size or idx.min() < 0 or idx.max() >= V:
        raise ValueError(f"trainable_token_indices must be distinct token ids below the "
                         f"vocabulary size {V} (resize_token_embeddings(len(tok)) first for new "
                         f"tokens), got {list(indices)!r}")
    wrapped = TrainableTokensEmbedding(emb, idx)
    model.model.embed_tokens = wrapped
    if model.config.tie_word_embeddings:
        model.lm_head = TrainableTokensHead(model.lm_head, wrapped.token_adapter)
    wrapped.token_adapter.trainable_tokens_delta.requires_grad = True


def token_adapter(model) -> TokenAdapter | None:
    emb = model.model.embed_tokens
    return emb.token_adapter if isinstance(emb, TrainableTokensEmbedding) else None


def merged_rows(model, state: dict) -> dict:
    """``state`` (a state dict) with the adapted rows written into the table (and the tied
    head) and the adapter's own entry removed."""
    adapter = token_adapter(model)
    if adapter is None:
        return state
    rows = _host(adapter.trainable_tokens_delta)
    for key in ("model.embed_tokens.weight", "lm_head.weight"):
        if key in state and (key == "model.embed_tokens.weight"
                             or model.config.tie_word_embeddings):
            table = np.array(state[key])
            table[adapter.token_indices] = rows.astype(table.dtype)
            state[key] = table
    state.pop("model.embed_tokens.token_adapter.trainable_tokens_delta", None)
    return state


def remove_trainable_tokens(model) -> None:
    """Write the adapted rows into the table and put the plain embedding (and head) back."""
    adapter = token_adapter(model)
    if adapter is None:
        return
    emb = model.model.embed_tokens
    emb.weight._data[adapter.token_indices] = _host(adapter.trainable_tokens_delta).astype(
        emb.weight.dtype)
    plain = nn.Embedding.__new__(nn.Embedding)
    nn.Module.__init__(plain)
    plain.num_embeddings, plain.embedding_dim = emb.num_embeddings, emb.embedding_dim
    plain.padding_idx = emb.padding_idx
    plain.weight = emb.weight
    model.model.embed_tokens = plain
    if isinstance(model.lm_head, TrainableTokensHead):
        head = nn.Linear.__new__(nn.Linear)
        nn.Module.__init__(head)
        head.in_features, head.out_features = model.lm_head.in_features, \
            model.lm_head.out_features
        head.weight, head.bias = plain.weight, model.lm_head.bias
        model.lm_head = head

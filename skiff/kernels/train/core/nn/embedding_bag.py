"""torch's ``nn.EmbeddingBag`` and ``F.embedding_bag``: the sum, mean or max of the embedding
rows of each bag, without materialising the per-token embeddings for the caller.

A bag is a row of a 2-D ``input`` or, for a 1-D ``input``, the run between two ``offsets``
(``include_last_offset``: the last offset closes the last bag). The bags are laid out padded,
(B, L_max) token positions with a mask, so one gather (:func:`F.embedding`, whose backward
scatter-adds into the table) and one reduction serve every bag; ``per_sample_weights`` (mode
"sum") multiply the rows and get their own gradient; ``padding_idx`` tokens are left out (the
mean divides by the other tokens' count); an empty bag gives zeros, as torch's."""

from __future__ import annotations

import numpy as np

from skiff.kernels.backend import to_numpy

from ..default_dtype import default_float
from ..tensor import Tensor, where
from . import functional as F
from .layers import _positive, normal_
from .module import Module, Parameter

__all__ = ["EmbeddingBag", "embedding_bag"]

_MODES = ("sum", "mean", "max")


def _ints(x, xp, what):
    """The integer array of ``x`` on the table's device (``xp``): a device input is not read
    back to the host."""
    a = x._data if isinstance(x, Tensor) else x
    a = a if hasattr(a, "dtype") and hasattr(a, "shape") else np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"embedding_bag: {what} must be integers, got dtype {a.dtype}")
    return xp.asarray(a).astype(np.int64)


def _bags(idx, offsets, include_last_offset, xp):
    """(flat token ids, start of each bag, length of each bag, the longest bag's length), on
    ``xp``'s device. A 2-D input reads nothing back; offsets are checked and the longest bag
    found with one read of four numbers (the padded layout's width depends on them)."""
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: a 2-D input is one bag per row; offsets must be "
                             "None (flatten the input to pass offsets)")
        b, n = idx.shape
        return (idx.reshape(-1), xp.arange(b, dtype=np.int64) * n,
                xp.full(b, n, dtype=np.int64), n)
    if idx.ndim != 1:
        raise ValueError(f"embedding_bag: input must be 1-D (with offsets) or 2-D, got "
                         f"{idx.ndim}-D")
    if offsets is None:
        raise ValueError("embedding_bag: a 1-D input needs offsets (the start of each bag), "
                         "e.g. offsets=skiff.tensor([0, 3, 5])")
    offs = _ints(offsets, xp, "offsets").reshape(-1)
    if offs.size == 0:
        raise ValueError("embedding_bag: offsets[0] has to be 0, got []")
    n = idx.size
    if include_last_offset:
        starts, ends = offs[:-1], offs[1:]
    else:
        starts, ends = offs, xp.concatenate([offs[1:], xp.full(1, n, dtype=np.int64)])
    lengths = ends - starts
    falls = (offs[1:] < offs[:-1]).sum() if offs.size > 1 else xp.zeros((), dtype=np.int64)
    longest = lengths.max() if lengths.size else xp.zeros((), dtype=np.int64)
    first, fell, last, width = (int(v) for v in to_numpy(xp.stack(
        [offs[0], falls, offs[-1], longest])))
    if first != 0:
        raise ValueError(f"embedding_bag: offsets[0] has to be 0, got [{first}]")
    if fell or last > n:
        raise ValueError(f"embedding_bag: offsets must rise and stay within the {n} "
                         f"tokens, got {to_numpy(offs).tolist()}")
    return idx, starts, lengths, width


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2.0,  # noqa: A002
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """torch's ``F.embedding_bag``: (B, D) sums, means or maxima of the bags' rows of
    ``weight``. ``sparse`` is accepted (the gradient is dense, the same values)."""
    if mode not in _MODES:
        raise ValueError(f"embedding_bag: mode must be one of {_MODES}, got {mode!r}")
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: max_norm and scale_grad_by_freq are not "
                                  "supported; renormalise the table yourself under no_grad")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError("embedding_bag: per_sample_weights is only supported for mode='sum' "
                         f"(got mode={mode!r}), as torch's")
    xp = weight.xp
    idx = _ints(input, xp, "input")
    flat, starts, lengths, width = _bags(idx, offsets, include_last_offset, xp)
    width = max(width, 1)
    pos = xp.arange(width, dtype=np.int64)
    inside = pos[None, :] < lengths[:, None]  # (B, L): a real token of the bag
    at = xp.where(inside, starts[:, None] + pos, 0)  # its position in flat
    tok = xp.where(inside, flat[at], 0) if flat.size else xp.zeros(at.shape, dtype=np.int64)
    keep = inside if padding_idx is None else inside & (tok != int(padding_idx))
    rows = F.embedding(tok, weight)  # (B, L, D)
    if mode == "max":
        best = rows.masked_fill(~keep[..., None], -np.inf).max(dim=1).values
        return where(keep.any(axis=1)[:, None], best, xp.zeros((), dtype=weight.dtype))
    w = Tensor._make(keep.astype(weight.dtype), False, None, 0)
    if per_sample_weights is not None:
        psw = per_sample_weights if isinstance(per_sample_weights, Tensor) else Tensor(
            per_sample_weights, dtype=weight.dtype)
        if psw.reshape(-1).shape[0] != flat.size:
            raise ValueError(f"embedding_bag: per_sample_weights has {psw.numel()} values for "
                             f"{flat.size} tokens (one per token, shaped like input)")
        w = w * psw.reshape(-1)[at]
    out = (rows * w.unsqueeze(-1)).sum(1)
    if mode == "mean":
        count = xp.maximum(keep.sum(axis=1), 1).astype(weight.dtype)[:, None]
        out = out / Tensor._make(count, False, None, 0)
    return out


class EmbeddingBag(Module):
    """torch's ``nn.EmbeddingBag``: a (num_embeddings, embedding_dim) table, N(0, 1) at first
    (the ``padding_idx`` row zero); ``forward(input, offsets=None, per_sample_weights=None)``
    gives one row per bag (see :func:`embedding_bag`)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        self.num_embeddings = _positive("num_embeddings", num_embeddings)
        self.embedding_dim = _positive("embedding_dim", embedding_dim)
        if mode not in _MODES:
            raise ValueError(f"EmbeddingBag: mode must be one of {_MODES}, got {mode!r}")
        if padding_idx is not None:
            if not -num_embeddings <= int(padding_idx) < num_embeddings:
                raise ValueError(f"padding_idx {padding_idx} is outside the table of "
                                 f"{num_embeddings} rows")
            padding_idx = int(padding_idx) % num_embeddings
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is None:
            table = normal_((num_embeddings, embedding_dim), 1.0, None, dtype)
            if padding_idx is not None:
                table[padding_idx] = 0
            self.weight = Parameter(table, dtype=dtype)
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"_weight has shape {tuple(_weight.shape)}, expected "
                                 f"{(num_embeddings, embedding_dim)}")
            self.weight = _weight if isinstance(_weight, Parameter) else Parameter(_weight)
        if device is not None:
            self.to(device)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """A bag layer over the (n, d) table ``embeddings`` (frozen unless ``freeze=False``)."""
        if embeddings.ndim != 2:
            raise ValueError(f"embeddings must be 2-D, got shape {tuple(embeddings.shape)}")
        weight = Parameter(embeddings, requires_grad=not freeze)
        return cls(*embeddings.shape, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                   _weight=weight, include_last_offset=include_last_offset,
                   padding_idx=padding_idx)

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                             self.scale_grad_by_freq, self.mode, self.sparse,
                             per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"

"""torch's packed sequences: ``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence``; ``LSTM``, ``GRU`` and ``RNN`` take one and give one
back, as torch's.

A packed batch keeps its padded (T, B, *) tensor and the lengths (in the batch's own order);
``.data`` is torch's packed layout (the steps one after another, each holding the sequences
still running, longest first), gathered from it, so ``batch_sizes``, ``sorted_indices`` and
``unsorted_indices`` are torch's too. The recurrent layers run the padded steps with a mask:
a sequence's state stops changing after its last step (the reverse direction starts at its own
last step) and its outputs there are zeros, which is what torch's packed kernels compute."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor, cat

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence"]


def _lengths(lengths):
    a = lengths._data if isinstance(lengths, Tensor) else lengths
    a = np.asarray(a.get() if hasattr(a, "get") else a).astype(np.int64).reshape(-1)
    if (a <= 0).any():  # torch's words (a RuntimeError there; skiff's was a ValueError)
        raise _LengthError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0 (pack_padded_sequence: every "
                           f"length must be positive, got {a.tolist()})")
    return a


class _LengthError(ValueError, RuntimeError):
    """A length <= 0: torch's RuntimeError, skiff's ValueError as before."""


class PackedSequence:
    """``data``, ``batch_sizes``, ``sorted_indices``, ``unsorted_indices`` as torch's; build
    one with :func:`pack_padded_sequence` or :func:`pack_sequence`."""

    def __init__(self, data=None, batch_sizes=None, sorted_indices=None, unsorted_indices=None,
                 *, _padded=None, _lengths=None):
        if _padded is None:  # from torch's fields: unpack data into the padded layout
            if data is None or batch_sizes is None:
                raise ValueError("PackedSequence needs data and batch_sizes (or use "
                                 "pack_padded_sequence)")
            bs = _lengths_any(batch_sizes)
            order = (np.arange(bs[0]) if sorted_indices is None
                     else _lengths_any(sorted_indices))
            lengths_sorted = (bs[None, :] > np.arange(bs[0])[:, None]).sum(1)
            lengths = np.empty_like(lengths_sorted)
            lengths[order] = lengths_sorted
            _padded = _unpack(data, bs, order)
            _lengths = lengths
        self._padded, self._lengths = _padded, np.asarray(_lengths, dtype=np.int64)
        steps = self._padded.shape[0]
        self.batch_sizes = Tensor((self._lengths[None, :] > np.arange(steps)[:, None]).sum(1)
                                  .astype(np.int64), dtype=np.int64)
        order = np.argsort(-self._lengths, kind="stable")
        self.sorted_indices = Tensor(order.astype(np.int64), dtype=np.int64)
        self.unsorted_indices = Tensor(np.argsort(order).astype(np.int64), dtype=np.int64)
        self._data = None

    @property
    def data(self):
        if self._data is None:
            self._data = self._padded.reshape(-1, *self._padded.shape[2:])[
                self._padded.xp.asarray(_packed_rows(self._lengths))]
        return self._data

    def __iter__(self):  # torch's PackedSequence is a namedtuple
        return iter((self.data, self.batch_sizes, self.sorted_indices, self.unsorted_indices))

    def to(self, *args, **kwargs):
        return PackedSequence(_padded=self._padded.to(*args, **kwargs), _lengths=self._lengths)

    def __repr__(self):
        return (f"PackedSequence(data={tuple(self.data.shape)}, "
                f"batch_sizes={self.batch_sizes.tolist()})")


def _lengths_any(x):
    a = x._data if isinstance(x, Tensor) else x
    return np.asarray(a.get() if hasattr(a, "get") else a).astype(np.int64).reshape(-1)


def _packed_rows(lengths):
    """For torch's packed order (step by step, longest first), the row of each element in
    the padded (T * B) layout."""
    b = len(lengths)
    order = np.argsort(-lengths, kind="stable")
    rows = [t * b + order[:int((lengths > t).sum())] for t in range(int(lengths.max()))]
    return np.concatenate(rows)


def _unpack(data, batch_sizes, order):
    """The padded (T, B, *) tensor of torch-packed ``data`` (differentiable: one gather)."""
    b, steps = int(batch_sizes[0]), len(batch_sizes)
    lengths_sorted = (batch_sizes[None, :] > np.arange(b)[:, None]).sum(1)
    lengths = np.empty_like(lengths_sorted)
    lengths[order] = lengths_sorted
    rows = _packed_rows(lengths)
    where_from = np.full(steps * b, len(rows), dtype=np.int64)  # the zero row
    where_from[rows] = np.arange(len(rows))
    zero = Tensor(data.xp.zeros((1, *data.shape[1:]), dtype=data.dtype), dtype=data.dtype)
    flat = cat([data, zero], 0)[data.xp.asarray(where_from)]
    return flat.reshape(steps, b, *data.shape[1:])


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """torch's: ``input`` (T, B, *) (``batch_first``: (B, T, *)) and each sequence's length."""
    lens = _lengths(lengths)
    x = input if isinstance(input, Tensor) else Tensor(input)
    if batch_first:
        x = x.transpose(0, 1)
    if len(lens) != x.shape[1]:
        raise ValueError(f"pack_padded_sequence: {len(lens)} lengths for a batch of "
                         f"{x.shape[1]}")
    if enforce_sorted and (np.diff(lens) > 0).any():
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lens.max() > x.shape[0]:
        raise ValueError(f"pack_padded_sequence: a length {lens.max()} is longer than the "
                         f"{x.shape[0]} steps of the input")
    return PackedSequence(_padded=x.narrow(0, 0, int(lens.max())), _lengths=lens)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """torch's: (padded, lengths); steps past a sequence's end hold ``padding_value``."""
    x, lens = sequence._padded, sequence._lengths
    steps = x.shape[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        if total_length > steps:
            pad = Tensor(x.xp.zeros((total_length - steps, *x.shape[1:]), dtype=x.dtype),
                         dtype=x.dtype)
            x = cat([x, pad], 0)
    inside = (np.arange(x.shape[0])[:, None] < lens[None, :]).reshape(
        x.shape[:2] + (1,) * (x.ndim - 2))
    from ..tensor import where

    fill = x.xp.asarray(padding_value, dtype=x.dtype)
    x = where(x.xp.asarray(inside), x, fill)
    if batch_first:
        x = x.transpose(0, 1)
    return x, Tensor(lens.copy(), dtype=np.int64)


def pack_sequence(sequences, enforce_sorted=True):
    """torch's: a list of (L_i, *) tensors, packed."""
    seqs = list(sequences)
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    if enforce_sorted and (np.diff(lens) > 0).any():
        raise RuntimeError("`sequences` must be sorted by length in decreasing order when "
                           "`enforce_sorted` is True (or pass enforce_sorted=False)")
    from .rnn_utils import pad_sequence

    return PackedSequence(_padded=pad_sequence(seqs), _lengths=lens)


def step_mask(packed):
    """(T, B, 1) booleans on the packed batch's device: step t of sequence b is real."""
    lens = packed._lengths
    m = np.arange(packed._padded.shape[0])[:, None] < lens[None, :]
    return packed._padded.xp.asarray(m[..., None])




def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """torch's: the list of sequences of a padded batch (T, B, *) (``batch_first``: (B, T, *)),
    each cut to its length (``lengths`` a tensor or a list). torch transposes a
    ``batch_first=False`` input in place; skiff leaves it as it is."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lens = lengths._data if isinstance(lengths, Tensor) else lengths
    lens = np.asarray(lens.get() if hasattr(lens, "get") else lens).astype(np.int64).reshape(-1)
    return [x[i, :int(n)] for i, n in enumerate(lens)]


def unpack_sequence(packed_sequences):
    """torch's: the list of sequences a :class:`PackedSequence` holds, in the batch's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)

"""``skiff.nn.utils.rnn``: torch's ``pad_sequence`` and packed sequences
(``PackedSequence``, ``pack_padded_sequence``, ``pad_packed_sequence``, ``pack_sequence``); the
public names of :mod:`skiff.kernels.train.core.nn.rnn_utils` and
:mod:`skiff.kernels.train.core.nn.packed_sequence`."""

from skiff.kernels.train.core.nn.packed_sequence import (  # noqa: F401
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    unpack_sequence,
    unpad_sequence,
)
from skiff.kernels.train.core.nn.rnn_utils import pad_sequence  # noqa: F401

__all__ = ["pad_sequence", "PackedSequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence"]

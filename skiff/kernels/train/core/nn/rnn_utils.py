"""torch's ``nn.utils.rnn.pad_sequence``: variable-length sequences padded to one tensor
(differentiable: each sequence is padded, then stacked). Packed sequences are not here (skiff's
recurrent layers take padded input and per-sequence lengths where they need them).
"""

from __future__ import annotations

from ..tensor import Tensor, stack
from .functional import pad

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """(T, B, *) from B tensors of shape (L_i, *) (``batch_first``: (B, T, *)), padded with
    ``padding_value`` on the right (or the left) of each sequence to the longest ``T``."""
    seqs = list(sequences)
    if not seqs:
        raise ValueError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("right", "left"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    trail = tuple(seqs[0].shape[1:])
    for i, s in enumerate(seqs):
        if tuple(s.shape[1:]) != trail:
            raise ValueError(f"pad_sequence: sequence {i} has trailing shape "
                             f"{tuple(s.shape[1:])}, the first {trail}")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        extra = longest - s.shape[0]
        amounts = [0, 0] * len(trail) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(pad(s, tuple(amounts), value=padding_value) if extra else s)
    out = stack(padded, 0)
    return out if batch_first else out.transpose(0, 1)

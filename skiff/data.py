"""``skiff.data``: data sets, loaders and the built-in corpora.

The public name of :mod:`skiff.kernels.train.data`; the same classes."""

from skiff.kernels.train import data as _real
from skiff.kernels.train.data import (  # noqa: F401
    CORPORA,
    ArrayDataset,
    DataLoader,
    PackedBatch,
    Subset,
    TextDataset,
    as_dataset,
    batch_size_of,
    builtin_dataset,
    corpus_path,
    corpus_text,
    make_blobs,
    make_shapes,
    pack_sequences,
    split_off,
    token_count,
)

__all__ = list(_real.__all__)  # the same names as skiff.kernels.train.data

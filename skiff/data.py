"""``skiff.data``: data sets, loaders and the built-in corpora.

The public name of :mod:`skiff.kernels.train.data`; the same classes."""

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

__all__ = [
    "ArrayDataset",
    "TextDataset",
    "DataLoader",
    "PackedBatch",
    "pack_sequences",
    "corpus_path",
    "corpus_text",
    "CORPORA",
    "batch_size_of",
    "token_count",
    "make_blobs",
    "make_shapes",
    "builtin_dataset",
    "as_dataset",
    "Subset",
    "split_off",
]

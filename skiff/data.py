"""``skiff.data``: data sets, loaders and the built-in corpora.

The public name of :mod:`skiff.kernels.train.data` (the same classes), and
:class:`ImageFolder` (a folder of class folders of images)."""

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
from skiff.kernels.train.image_folder import ImageFolder  # noqa: F401

__all__ = [*_real.__all__, "ImageFolder"]  # skiff.kernels.train.data's names, and folders


"""torch's ``utils.data`` for hand-written training loops: ``Dataset``, ``TensorDataset``,
``Subset``, ``ConcatDataset`` (``ds1 + ds2``), ``random_split`` and a ``DataLoader`` that yields
tensors (torch's samplers: ``utils_data_samplers.py``).

``for xb, yb in DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)`` gives batches
of tensors as torch's does; the order is drawn, at each ``iter``, from skiff's seeded generator
(``skiff.manual_seed``) or the ``generator`` given, so it is reproducible but not torch's
order. Items of other datasets (tuples, dicts, numbers, numpy arrays or tensors) are stacked
field by field into tensors (``collate_fn`` replaces that). Loading runs in this process:
``num_workers`` and ``pin_memory`` are accepted and ignored. (``skiff.data.DataLoader`` is the
Trainer's: numpy batches, resumable, sharded over ranks.)
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .random import get_generator
from .tensor import Tensor, stack, tensor

__all__ = ["Dataset", "TensorDataset", "Subset", "random_split", "DataLoader",
           "default_collate", "ConcatDataset", "IterableDataset", "ChainDataset",
           "StackDataset", "get_worker_info"]


class Dataset:
    """Base class: define ``__len__`` and ``__getitem__``."""

    def __getitem__(self, index):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of items: define ``__iter__``; a ``DataLoader`` batches them in order
    (no ``shuffle``/``sampler``, as torch's)."""

    def __iter__(self):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def get_worker_info():
    """None: skiff's DataLoader loads in the calling process (torch's answer there)."""
    return None


class StackDataset(Dataset):
    """Items of several datasets side by side: a tuple (positional) or a dict (keywords)."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset takes datasets as positional or as keyword "
                             "arguments, not both")
        self.datasets = args or kwargs
        parts = list(args) if args else list(kwargs.values())
        if not parts:
            raise ValueError("StackDataset needs at least one dataset")
        n = len(parts[0])
        if any(len(d) != n for d in parts):
            raise ValueError("Size mismatch between datasets")
        self._length = n

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)


class TensorDataset(Dataset):
    """Rows of tensors with the same first dimension: ``ds[i] == (X[i], y[i])``."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        self.tensors = tuple(t if isinstance(t, Tensor) else tensor(t) for t in tensors)
        n = len(self.tensors[0])
        if any(len(t) != n for t in self.tensors):
            shapes = ", ".join(str(tuple(t.shape)) for t in self.tensors)
            raise ValueError(f"size mismatch between tensors: {shapes} (the first axes differ)")

    def __len__(self) -> int:
        return len(self.tensors[0])

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index):
        if isinstance(index, (list, np.ndarray)):
            return self.dataset[np.asarray(self.indices)[np.asarray(index)]]
        return self.dataset[self.indices[index]]


class ConcatDataset(Dataset):
    """The items of several datasets one after another (``cumulative_sizes`` as torch's)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        self.cumulative_sizes, total = [], 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index = int(index)
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for {len(self)} items")
            index += len(self)
        if index >= len(self):
            raise IndexError(f"index {index} is out of range for {len(self)} items")
        k = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][index - start]


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Split into non-overlapping subsets of ``lengths`` (counts, or fractions summing to 1),
    in an order drawn from skiff's generator (or ``generator``)."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and any(
            isinstance(x, float) for x in lengths):
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"the lengths {lengths} do not add up to the dataset's {n} items")
    order = get_generator(generator).permutation(n)
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, order[start:start + k]))
        start += k
    return out


def default_collate(items):
    """Stack a list of items field by field: tensors, numpy arrays and numbers become one
    tensor each; tuples, lists and dicts keep their structure."""
    first = items[0]
    if isinstance(first, Tensor):
        return stack(items)
    if isinstance(first, (tuple, list)):
        return type(first)(default_collate([it[k] for it in items]) for k in range(len(first)))
    if isinstance(first, dict):
        return {k: default_collate([it[k] for it in items]) for k in first}
    if isinstance(first, (str, bytes)):
        return list(items)
    arr = np.stack([np.asarray(it) for it in items])
    return Tensor(arr, dtype=arr.dtype)  # the stacked array itself: no second copy


class DataLoader:
    """Minibatches of ``dataset``: ``batch_size`` items each, in order or (``shuffle``)
    in a new permutation at each pass, the last smaller batch kept unless ``drop_last``."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 generator=None, **_ignored):
        if batch_size is not None and (not isinstance(batch_size, (int, np.integer))
                                       or batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if sampler is not None and shuffle:
            raise ValueError("sampler and shuffle=True exclude each other")
        if isinstance(dataset, IterableDataset) and (shuffle or sampler is not None
                                                     or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, "
                             "sampler and batch_sampler (the stream gives the order)")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, bool(shuffle)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.collate_fn, self.drop_last, self.generator = collate_fn, drop_last, generator
        self.num_workers = num_workers

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches(self):
        if self.batch_sampler is not None:
            yield from self.batch_sampler
            return
        if self.sampler is not None:
            order = np.asarray(list(self.sampler))
        elif self.shuffle:
            order = get_generator(self.generator).permutation(len(self.dataset))
        else:
            order = np.arange(len(self.dataset))
        if self.batch_size is None:
            yield from order
            return
        for start in range(0, len(order), self.batch_size):
            index = order[start:start + self.batch_size]
            if self.drop_last and len(index) < self.batch_size:
                return
            yield index

    def _stream(self):
        """Batches of an ``IterableDataset``, in its order."""
        collate = self.collate_fn or default_collate
        if self.batch_size is None:
            for item in self.dataset:
                yield item if self.collate_fn is None else self.collate_fn(item)
            return
        batch = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield collate(batch)

    def __iter__(self):
        ds = self.dataset
        if isinstance(ds, IterableDataset):
            yield from self._stream()
            return
        for index in self._batches():
            if self.batch_size is None and self.batch_sampler is None:
                yield ds[int(index)] if self.collate_fn is None else self.collate_fn(ds[int(index)])
            elif isinstance(ds, TensorDataset) and self.collate_fn is None:
                yield ds[np.asarray(index)]  # one gather per tensor
            else:
                items = [ds[int(i)] for i in index]
                yield (self.collate_fn or default_collate)(items)

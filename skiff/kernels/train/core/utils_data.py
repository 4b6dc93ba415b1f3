"""torch's ``utils.data`` for hand-written training loops: ``Dataset``, ``TensorDataset``,
``Subset``, ``ConcatDataset`` (``ds1 + ds2``), ``random_split`` and a ``DataLoader`` that yields
tensors (torch's samplers: ``utils_data_samplers.py``).

``for xb, yb in DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)`` gives batches
of tensors as torch's does; the order is drawn, at each ``iter``, from skiff's seeded generator
(``skiff.manual_seed``) or the ``generator`` given, so it is reproducible but not torch's
order. Items of other datasets (tuples, dicts, numbers, numpy arrays or tensors) are stacked
field by field into tensors, with torch's ``default_collate`` structure (tuples become lists)
(``collate_fn`` replaces that).

``num_workers > 0``: skiff starts no worker processes. Loading runs in this process, one batch
after another, with the same batches in the same order as ``num_workers=0``;
``worker_init_fn`` is never called and ``get_worker_info()`` is None (so an
``IterableDataset`` that shards itself by worker yields its whole stream once, where torch's
workers would each yield a shard). The worker options (``prefetch_factor``,
``persistent_workers``, ``timeout``, ``pin_memory``) are checked as torch checks them and
otherwise ignored. (``skiff.data.DataLoader`` is the Trainer's: numpy batches, resumable,
sharded over ranks.)
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .random import get_generator
from .tensor import Tensor, stack, tensor
from .utils_data_samplers import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["Dataset", "TensorDataset", "Subset", "random_split", "DataLoader",
           "default_collate", "ConcatDataset", "IterableDataset", "ChainDataset",
           "StackDataset", "get_worker_info", "default_convert"]


class _Mismatch(ValueError, AssertionError):
    """torch raises AssertionError for misused datasets; skiff's ValueError is kept too."""


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
            raise _Mismatch(f"Size mismatch between tensors: the shapes {shapes} have a "
                            f"size mismatch in the first axis")

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
        if not self.datasets:  # torch's types and words
            raise _Mismatch("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise _Mismatch("ConcatDataset does not support IterableDataset")
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
                raise ValueError("absolute value of index should not exceed dataset length")
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
    """Stack a list of items field by field, as torch's ``default_collate``: tensors, numpy
    arrays and numbers become one tensor each; dicts stay dicts, named tuples stay named
    tuples, other tuples and lists become lists (torch's rule); strings stay as given."""
    first = items[0]
    if isinstance(first, (Tensor, np.ndarray)):
        for k, it in enumerate(items):
            if tuple(it.shape) != tuple(first.shape):
                raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                                   f"{list(first.shape)} at entry 0 and {list(it.shape)} at "
                                   f"entry {k}")
    if isinstance(first, Tensor):
        return stack(items)
    if isinstance(first, (str, bytes)):
        return items
    if isinstance(first, dict):
        return {k: default_collate([it[k] for it in items]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(s) for s in zip(*items)))
    if isinstance(first, (tuple, list)):
        n = len(first)
        if any(len(it) != n for it in items):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(s) for s in zip(*items)]
    if first is None or (isinstance(first, np.ndarray) and first.dtype.kind in "OUS"):
        kind = type(first) if first is None else first.dtype
        raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                        f"dicts or lists; found {kind}")
    arr = np.stack([np.asarray(it) for it in items])
    return Tensor(arr, dtype=arr.dtype)  # the stacked array itself: no second copy


def default_convert(data):
    """torch's ``default_convert`` (what a DataLoader with ``batch_size=None`` applies to each
    item): numpy arrays and numpy scalars become tensors, tuples become lists (named tuples
    stay), dicts and lists are converted field by field, anything else is kept."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.generic)):
        if data.dtype.kind in "OUSV":
            return data
        arr = np.asarray(data)
        return Tensor(arr, dtype=arr.dtype)
    if isinstance(data, dict):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (tuple, list)):
        return [default_convert(d) for d in data]
    return data


class DataLoader:
    """Minibatches of ``dataset``: ``batch_size`` items each, in order or (``shuffle``)
    in a new permutation at each pass, the last smaller batch kept unless ``drop_last``."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        # torch's checks, in torch's order and words (a port fails where torch's fails)
        if not isinstance(num_workers, (int, np.integer)) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if isinstance(dataset, IterableDataset):
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(
                batch_size, (int, np.integer)) or batch_size < 1):
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size!r}")
        self.dataset, self.batch_size, self.shuffle = dataset, batch_size, bool(shuffle)
        # _sampler / _batch_sampler: what was given (None: batched here, and the Trainer
        # follows it); dl.sampler / dl.batch_sampler: torch's objects, a SequentialSampler or
        # RandomSampler and a BatchSampler over it when not given (None for an IterableDataset)
        self._sampler, self._batch_sampler = sampler, batch_sampler
        if sampler is None and not isinstance(dataset, IterableDataset):
            # a RandomSampler makes torch's checks (an empty data set)
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_sampler is None and batch_size is not None and sampler is not None:
            batch_sampler = BatchSampler(sampler, int(batch_size), bool(drop_last))
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.collate_fn, self.drop_last, self.generator = collate_fn, drop_last, generator
        # loading runs in this process whatever num_workers says (see the module's doc): the
        # worker options are kept for inspection; worker_init_fn is never called
        self.num_workers, self.pin_memory, self.timeout = num_workers, pin_memory, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers
        self.pin_memory_device, self.in_order = pin_memory_device, in_order

    def __len__(self) -> int:
        if self._batch_sampler is not None:
            return len(self._batch_sampler)
        n = len(self._sampler) if self._sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _batches(self):
        if self._batch_sampler is not None:
            yield from self._batch_sampler
            return
        if self._sampler is not None:
            order = np.asarray(list(self._sampler))
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
                yield (self.collate_fn or default_convert)(item)
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
            if self.batch_size is None and self._batch_sampler is None:
                yield (self.collate_fn or default_convert)(ds[int(index)])
            elif isinstance(ds, TensorDataset) and self.collate_fn is None:
                yield list(ds[np.asarray(index)])  # one gather per tensor; a list, as torch's
            else:
                items = [ds[int(i)] for i in index]
                yield (self.collate_fn or default_collate)(items)

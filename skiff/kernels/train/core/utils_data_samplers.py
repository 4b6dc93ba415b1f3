"""torch's samplers for ``skiff.utils.data``: ``Sampler``,
``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler``,
and ``BatchSampler`` (``ConcatDataset``, also ``ds1 + ds2``, is in ``utils_data.py``).

The draws come from skiff's seeded generator (``skiff.manual_seed``) or the ``generator``
given: reproducible, with torch's distributions, but not torch's numbers."""

from __future__ import annotations

import math

import numpy as np

from .random import get_generator, new_generator
from .tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]


def _count(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


class Sampler:
    """Base class: define ``__iter__`` (indices) and ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__} does not define __iter__")


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new permutation at each pass, or ``num_samples`` draws with ``replacement``."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num = num_samples
        _count("num_samples", self.num_samples)  # torch's check (an empty data set fails it)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num is None else self._num

    def __iter__(self):
        n, k, g = len(self.data_source), self.num_samples, get_generator(self.generator)
        if self.replacement:
            return iter(g.integers(0, n, size=k).tolist())
        reps = [g.permutation(n) for _ in range(-(-k // n))]
        return iter(np.concatenate(reps)[:k].tolist())

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order at each pass."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = list(indices), generator

    def __iter__(self):
        order = get_generator(self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in order])

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``
    (with ``replacement``, or each index at most once without)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        self.num_samples = _count("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement!r}")
        w = weights._data if isinstance(weights, Tensor) else weights
        w = np.asarray(w.get() if hasattr(w, "get") else w, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1-D sequence, got shape {w.shape}")
        if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative and not all zero")
        if not replacement and self.num_samples > np.count_nonzero(w):
            # torch 2.13 draws zero-weight indices here; skiff refuses instead
            raise ValueError(f"cannot draw {self.num_samples} samples without replacement "
                             f"from {np.count_nonzero(w)} non-zero weights")
        self.weights, self.replacement, self.generator = w, replacement, generator

    def __iter__(self):
        p = self.weights / self.weights.sum()
        g = get_generator(self.generator)
        return iter(g.choice(len(p), size=self.num_samples, replace=self.replacement,
                             p=p).tolist())

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one smaller unless
    ``drop_last``); give it to ``DataLoader(batch_sampler=...)``."""

    def __init__(self, sampler, batch_size, drop_last):
        self.sampler, self.batch_size = sampler, _count("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(int(i))
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(Sampler):
    """torch's ``DistributedSampler(dataset, num_replicas, rank, shuffle=True, seed=0,
    drop_last=False)``: rank ``rank``'s share of the indices, padded (by repeating the first
    ones) or cut (``drop_last``) to a multiple of ``num_replicas``, every ``num_replicas``-th
    from ``rank`` on; call ``set_epoch(e)`` at each epoch for a new shuffle. skiff has no
    torch process group: pass ``num_replicas`` and ``rank`` (torch's ValueError otherwise).
    Without ``shuffle`` the indices are torch's exactly; with it, the permutation of epoch
    ``e`` is drawn from a generator seeded ``seed + e`` (the same on every rank, as torch's,
    but not torch's numbers)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            raise ValueError("Default process group has not been initialized, please make "
                             "sure to call init_process_group. (skiff has no torch process "
                             "group: pass num_replicas= and rank=)")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, int(num_replicas), int(rank)
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = new_generator(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch

"""A DataLoader's own ``collate_fn`` for the Trainer's batches (:class:`Collated`), its
``WeightedRandomSampler`` (:class:`Sampled`: the Trainer's loader draws each epoch's items
so). Used by :mod:`.data`
(``skiff.utils.data``'s loaders) and :mod:`.trainer_torch_habits` (torch's)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["Collated", "Sampled", "host_arrays", "weighted_sampling"]


def weighted_sampling(sampler):
    """``(weights, num_samples, replacement)`` of a ``WeightedRandomSampler`` (torch's or
    skiff's), or None for any other sampler."""
    if type(sampler).__name__ != "WeightedRandomSampler" or not hasattr(sampler, "weights"):
        return None
    w = sampler.weights
    w = w.detach().cpu().numpy() if hasattr(w, "detach") else getattr(w, "_data", w)
    return (np.asarray(w, np.float64).reshape(-1), int(sampler.num_samples),
            bool(sampler.replacement))


class Sampled:
    """A dataset whose training epochs are ``num_samples`` items drawn with probabilities
    proportional to ``weights`` (``replacement``: as torch's ``WeightedRandomSampler``; the
    draw is the Trainer's own, from its seed and the epoch, so a resumed run draws the same
    and dp's ranks share one draw). ``sampling`` is read by :class:`.data.DataLoader`;
    other attributes are the dataset's."""

    def __init__(self, dataset, sampling):
        weights, num_samples, replacement = sampling
        if len(weights) != len(dataset):
            raise ValueError(f"the WeightedRandomSampler has {len(weights)} weights for a "
                             f"dataset of {len(dataset)} items: one weight per item")
        self.dataset, self.sampling = dataset, sampling

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i):
        return self.dataset[i]

    def __getattr__(self, name):
        if name.startswith("__") or name in ("dataset", "sampling"):
            raise AttributeError(name)
        return getattr(self.dataset, name)


class Collated:
    """A dataset whose batches are ``collate_fn(items)`` (a DataLoader's own: torch's, or
    ``skiff.utils.data``'s), with torch or skiff Tensors in what it returns as numpy arrays;
    the Trainer, ``evaluate`` and ``predict`` order, shard and batch its items as any other
    dataset's. Other attributes (``targets``, ``classes``) are the dataset's."""

    def __init__(self, dataset, collate_fn):
        self.dataset, self.collate_fn = dataset, collate_fn

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i):
        return self.dataset[i]

    def __getattr__(self, name):
        if name.startswith("__") or name in ("dataset", "collate_fn"):
            raise AttributeError(name)
        return getattr(self.dataset, name)

    def collate(self, items):
        out = host_arrays(self.collate_fn(items))
        if isinstance(out, (list, tuple)) and len(out) == len(items) and out and all(
                isinstance(o, (tuple, list, dict)) for o in out):  # the items, not stacked
            raise TypeError(f"the DataLoader has its own collate_fn, which returned "
                            f"{len(out)} items ({type(out[0]).__name__}s), not a batch of "
                            "arrays: the Trainer "
                            "needs its batches as arrays or tensors ((x, y), or a dict of "
                            "them): stack them in the collate_fn, or pass the loader's "
                            "dataset (loader.dataset) and batch_size= to the Trainer")
        return out

    def __repr__(self) -> str:
        return f"Collated({self.dataset!r}, {getattr(self.collate_fn, '__name__', '...')})"


def host_arrays(batch):
    """``batch`` with each tensor in it (torch's, skiff's) a numpy array, tuples and lists
    kept, a mapping (transformers' ``BatchEncoding`` of a data collator) as a dict (a
    namedtuple or another object is left as it is)."""
    if type(batch).__module__.split(".")[0] == "torch" and hasattr(batch, "detach"):
        return batch.detach().cpu().numpy()
    if type(batch).__module__.startswith("skiff.") and hasattr(batch, "numpy") and \
            hasattr(batch, "shape"):
        return batch.numpy()
    if isinstance(batch, Mapping):  # a dict, or transformers' BatchEncoding (a UserDict)
        return {k: host_arrays(v) for k, v in batch.items()}
    if type(batch) in (tuple, list):
        return type(batch)(host_arrays(v) for v in batch)
    return batch

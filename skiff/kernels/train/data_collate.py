"""A DataLoader's own ``collate_fn`` for the Trainer's batches (:class:`Collated`), its
``WeightedRandomSampler`` (:class:`Sampled`: the Trainer's loader draws each epoch's items
so). Used by :mod:`.data`
(``skiff.utils.data``'s loaders) and :mod:`.trainer_torch_habits` (torch's)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["Collated", "Drawn", "Sampled", "TorchDraw", "host_arrays", "torch_draw",
           "weighted_sampling"]


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


def torch_draw(loader):
    """A :class:`TorchDraw` of a torch DataLoader whose ``RandomSampler`` (``shuffle=True``)
    or ``WeightedRandomSampler`` draws from a ``generator`` of the user's, or None (no
    generator: torch seeds each epoch from its global generator, which skiff's model and
    data do not draw from as torch's do, so the Trainer's own seeded order is used); a
    ``RandomSampler`` without a generator but with ``replacement=True`` or ``num_samples``
    draws as torch's does (its length and draws) from the Trainer's seed."""
    import torch.utils.data as tud

    sampler = loader.sampler
    if isinstance(sampler, tud.RandomSampler) and sampler.generator is None and (
            sampler.replacement or len(sampler) != len(sampler.data_source)):
        # with replacement, or num_samples: torch's draw (it was read as a plain shuffle of
        # the dataset), from a generator of the Trainer's seed and the epoch
        return TorchDraw(sampler, False)
    if not isinstance(sampler, (tud.RandomSampler, tud.WeightedRandomSampler)) or \
            getattr(sampler, "generator", None) is None:
        return None
    return TorchDraw(sampler, loader.generator is sampler.generator)


class TorchDraw:
    """Each epoch's item order as torch's DataLoader draws it from the sampler's generator
    (round 43 h10: a script's ``DataLoader(ds, shuffle=True, generator=g)`` trained on
    skiff's own order, another than torch's, and a seed sweep over ``g`` changed nothing).

    Torch's loader, per epoch (``iter(loader)``): one int64 from ``loader.generator`` (the
    workers' base seed; the sampler's own generator when ``shuffle=True, generator=g``),
    then the sampler's draw: ``randperm(n)`` for every whole ``n`` of ``num_samples`` and one
    more cut to the rest (drawn even when the rest is 0), ``randint`` in 32s with
    ``replacement=True``, ``multinomial`` for a ``WeightedRandomSampler``. Here a copy of
    the sampler on a clone of its generator's state at ``train()`` replays them (a resumed
    script that builds its loader with the same seed draws the same epochs; the user's
    generator is left as it is)."""

    def __init__(self, sampler, shared: bool):
        import copy

        import torch

        self._torch = torch
        # None: no generator of the user's; each epoch draws from the seed and epoch
        self.state = None if sampler.generator is None else sampler.generator.get_state().clone()
        self.sampler, self.shared = copy.copy(sampler), shared
        self.count = len(sampler)  # num_samples
        # its weights are for every item: val_split cannot cut such data (data.split_off)
        self.weighted = type(sampler).__name__ == "WeightedRandomSampler"
        self._done: list = []  # the generator's state after each epoch drawn so far

    def over(self, n: int) -> TorchDraw:
        """This draw over the first ``n`` items (``val_split`` held out the rest): torch's
        ``DataLoader(Subset(ds, range(n)), ...)`` from the same generator state (round 44
        h5: the training rows were read in the Trainer's own order, not the generator's)."""
        import copy

        made = copy.copy(self)
        made.sampler = copy.copy(self.sampler)
        if hasattr(made.sampler, "indices"):  # a SubsetRandomSampler's positions (round 45)
            made.sampler.indices = range(int(n))
        elif getattr(made.sampler, "_num_samples", None) is None:
            made.sampler.data_source = range(int(n))
        made.count, made._done = len(made.sampler), []
        return made

    def order(self, epoch: int, seed: int = 0) -> np.ndarray:
        torch = self._torch
        if self.state is None:  # torch seeds each epoch's generator afresh: so here, by seed
            gen = torch.Generator().manual_seed(
                int(np.random.SeedSequence([seed, epoch]).generate_state(1)[0]))
            self.sampler.generator = gen
            order = np.asarray(list(self.sampler), np.int64)
            self.sampler.generator = None
            return order
        done = self._done[:epoch]
        gen = torch.Generator()
        gen.set_state(done[-1] if done else self.state)
        self.sampler.generator = gen
        for e in range(len(done), epoch + 1):
            if self.shared:  # the loader's base seed, from the same generator
                torch.empty((), dtype=torch.int64).random_(generator=gen)
            order = np.asarray(list(self.sampler), np.int64)  # to its end: the last draw
            if e == len(self._done):
                self._done.append(gen.get_state().clone())
        self.sampler.generator = None
        return order


class Drawn:
    """A dataset whose training epochs are ``torch_draw.order(epoch)`` (a :class:`TorchDraw`:
    torch's DataLoader's order from the user's generator); read by :class:`.data.DataLoader`
    when it shuffles. Other attributes are the dataset's."""

    def __init__(self, dataset, draw: TorchDraw):
        self.dataset, self.torch_draw = dataset, draw

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i):
        return self.dataset[i]

    def __getattr__(self, name):
        if name.startswith("__") or name in ("dataset", "torch_draw"):
            raise AttributeError(name)
        return getattr(self.dataset, name)


class DistributedDraw:
    """Each epoch's global item order of a torch ``DistributedSampler`` (a DDP script's
    loader; round 46 h7: refused before). Its ``num_replicas`` ranks each read
    ``indices[rank::num_replicas]`` of the epoch's permutation (``randperm`` from ``seed +
    epoch``: the script's ``sampler.set_epoch(epoch)`` at each epoch's start), padded by its
    first indices to a multiple of the replicas (or cut, ``drop_last=True``), in batches of
    the loader's ``batch_size``. Rank r's batch k is then items r::replicas of the global
    batch k of ``batch_size x replicas`` items of that order: the Trainer's batches, which it
    shards over its own ranks (rank r takes r::ranks) as the sampler does. The order here is
    the sampler's own draw, read for each replica (``copy`` of it, ``rank`` set) and
    interleaved."""

    weighted = False

    def __init__(self, sampler):
        import copy

        self.sampler = copy.copy(sampler)
        self.replicas = int(sampler.num_replicas)
        self.count = int(sampler.total_size)  # the epoch's items, padded or cut
        self.start = 0  # set_epoch's epoch where train() begins is the script's epoch 0

    def over(self, n: int) -> DistributedDraw:
        """This sampler over the first ``n`` items (``val_split`` held out the rest): a
        ``DistributedSampler(Subset(ds, range(n)), ...)`` of the same settings."""
        s = self.sampler  # torch's, or skiff.utils.data's of the same arguments
        return DistributedDraw(type(s)(range(int(n)), num_replicas=s.num_replicas, rank=0,
                                       shuffle=s.shuffle, seed=s.seed, drop_last=s.drop_last))

    def order(self, epoch: int, seed: int = 0) -> np.ndarray:
        import copy

        per_rank = []
        for r in range(self.replicas):
            s = copy.copy(self.sampler)
            s.rank = r
            s.set_epoch(self.start + int(epoch))
            per_rank.append(np.asarray(list(s), np.int64))
        n = len(per_rank[0])
        order = np.empty(n * self.replicas, np.int64)
        for r, part in enumerate(per_rank):
            order[r::self.replicas] = part
        return order

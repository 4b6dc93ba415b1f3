"""A DataLoader's own ``collate_fn`` for the Trainer's batches (:class:`Collated`), and what
to use instead of a sampler it cannot follow. Used by :mod:`.data` (``skiff.utils.data``'s
loaders) and :mod:`.trainer_torch_habits` (torch's)."""

from __future__ import annotations

__all__ = ["Collated", "host_arrays", "sampler_hint"]


def sampler_hint(sampler) -> str:
    """What to use instead of a sampler the Trainer cannot follow (a WeightedRandomSampler,
    the usual way to oversample a rare class: class_weight weighs its loss instead)."""
    if type(sampler).__name__ == "WeightedRandomSampler":
        return ("; for classes out of balance, Trainer(class_weight='balanced') weighs each "
                "class's loss as a WeightedRandomSampler of 1/count weights draws them, "
                "or repeat the rare items in the dataset")
    return ""


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
    """``batch`` with each tensor in it (torch's, skiff's) a numpy array, tuples, lists and
    dicts kept (a namedtuple or another object is left as it is)."""
    if type(batch).__module__.split(".")[0] == "torch" and hasattr(batch, "detach"):
        return batch.detach().cpu().numpy()
    if type(batch).__module__.startswith("skiff.") and hasattr(batch, "numpy") and \
            hasattr(batch, "shape"):
        return batch.numpy()
    if isinstance(batch, dict):
        return {k: host_arrays(v) for k, v in batch.items()}
    if type(batch) in (tuple, list):
        return type(batch)(host_arrays(v) for v in batch)
    return batch

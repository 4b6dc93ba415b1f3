"""Every rank of a data-parallel Trainer must be given the same dataset; check it first.

The Trainer gives each rank its share of every batch of the dataset it was passed (as torch's
``DistributedSampler`` does), so each rank passes the *whole* dataset. A user who loaded a
different file on each rank (``data_rank{r}.npz``), as some torch scripts do without a
sampler, got a job that hung at the end of the shorter rank's epoch (the other rank waited
in the next all-reduce for ever) or, with equal lengths, trained silently on half of each
rank's rows. :func:`check_same_data` compares the lengths of the training sets over the
ranks (one small all-gather) and, for array datasets, a hash of up to 16 rows spread over
them; a difference fails on every rank before the first step, naming each rank's length and
the way to pass the data. Validation sets are not compared: each rank evaluates its whole
validation set, and a set of its own on each rank is allowed (early stopping then watches
the ranks' mean, round 28).
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["check_same_data", "fingerprint"]

SAMPLE_ROWS = 16


def fingerprint(dataset) -> str | None:
    """A hash of the shapes, dtypes and up to 16 spread rows of an array dataset (also
    through a ``Subset``); None for other datasets (their items may be drawn at random:
    augmentations)."""
    index = None
    base = dataset
    if hasattr(base, "index") and hasattr(base, "dataset"):  # a Subset of rows
        index, base = np.asarray(base.index), base.dataset
    if isinstance(getattr(base, "dataset", None), list):  # a DataLoader's collate_fn over it
        base = base.dataset
    if isinstance(base, list) and index is None:  # a list of samples, or a stream's pass
        return _samples_print(base)
    arrays = getattr(base, "arrays", None)
    if not isinstance(arrays, tuple) or not arrays:
        return None
    n = len(dataset)
    if n == 0:
        return None
    rows = np.unique(np.linspace(0, n - 1, min(n, SAMPLE_ROWS)).astype(np.int64))
    if index is not None:
        rows = index[rows]
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(f"{a.shape}{a.dtype.str}".encode())
        h.update(np.ascontiguousarray(a[rows]).tobytes())
    return h.hexdigest()


def _samples_print(items: list) -> str | None:
    """A hash of up to 16 spread samples of a list (round 44 h11: a list of samples, or a
    stream's pass, had its length compared alone); None where a sample is not arrays."""
    n = len(items)
    if n == 0:
        return None
    h = hashlib.sha256()

    def add(field) -> bool:
        if isinstance(field, dict):
            return all(add(v) for _, v in sorted(field.items(), key=lambda kv: str(kv[0])))
        if isinstance(field, (tuple, list)):
            return all(add(v) for v in field)
        if isinstance(field, (int, float, np.number, np.ndarray)) or hasattr(field, "numpy"):
            a = np.asarray(field.detach().cpu().numpy() if hasattr(field, "detach") else field)
            h.update(f"{a.shape}{a.dtype.str}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
            return True
        return False

    rows = np.unique(np.linspace(0, n - 1, min(n, SAMPLE_ROWS)).astype(np.int64))
    if not all(add(items[int(i)]) for i in rows):
        return None
    return h.hexdigest()


def check_same_data(comm, dataset, *, stream: bool = False) -> str | None:
    """Raise ValueError on every rank when the ranks' training sets differ (``comm``: an
    mpi4py communicator of the ranks that train together).

    ``stream``: the data set is a pass read from a stream (an ``IterableDataset``, a
    generator). Its samples differing over the ranks is returned as a line to say, not
    refused: random augmentations drawn from each rank's own generator differ too, and train
    right (each rank takes its share of every batch of its pass); a stream that splits itself
    by rank (``skiff.world().rank``, ``get_worker_info()`` under workers) trains on
    1/ranks of each rank's part, which the line names (round 44 h11)."""
    seen = comm.allgather((len(dataset), fingerprint(dataset)))
    lengths, prints = [s[0] for s in seen], [s[1] for s in seen]
    how = ("every rank passes the whole data set, the same on each: the Trainer gives each "
           "rank its share of every batch (as torch's DistributedSampler does); to train on "
           "one file per rank, load all of them on every rank and concatenate them")
    if len(set(lengths)) > 1:
        each = ", ".join(f"rank {r}: {n}" for r, n in enumerate(lengths))
        exc = ValueError(f"the ranks were given training sets of different sizes ({each} "
                         f"items): {how}")
    elif None not in prints and len(set(prints)) > 1:
        groups: dict = {}
        for r, p in enumerate(prints):
            groups.setdefault(p, []).append(r)
        parts = " | ".join(", ".join(f"rank {r}" for r in g) for g in groups.values())
        if stream:
            return (f"the ranks' streams yielded different samples ({lengths[0]} each; "
                    f"{parts}): each rank reads the whole stream and takes its share of "
                    "every batch (as torch's DistributedSampler shares a dataset), so a "
                    "stream that splits itself by rank trains on 1/"
                    f"{len(lengths)} of each rank's part: yield every sample on every rank "
                    "(random augmentations drawn per rank are fine)")
        exc = ValueError(f"the ranks were given different training sets of the same size "
                         f"({lengths[0]} items each, but their rows differ: {parts}): {how}")
    else:
        return None
    exc.all_ranks = True  # raised on every rank at once: no rank alarms the others
    raise exc

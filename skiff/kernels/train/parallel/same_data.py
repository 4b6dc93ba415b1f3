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


def check_same_data(comm, dataset) -> None:
    """Raise ValueError on every rank when the ranks' training sets differ (``comm``: an
    mpi4py communicator of the ranks that train together)."""
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
        exc = ValueError(f"the ranks were given different training sets of the same size "
                         f"({lengths[0]} items each, but their rows differ: {parts}): {how}")
    else:
        return
    exc.all_ranks = True  # raised on every rank at once: no rank alarms the others
    raise exc

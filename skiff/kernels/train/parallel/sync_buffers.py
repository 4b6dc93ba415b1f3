"""Float buffers (BatchNorm's running mean and variance) kept equal over data-parallel ranks.

Each rank normalises its own rows with its own batch statistics, as torch's
``DistributedDataParallel`` does without ``SyncBatchNorm``, so the losses are DDP's. But
each rank also folds its own rows' statistics into its running averages, and after a
2-rank run the ranks held different running means and variances: ``predict`` gave other
outputs on rank 1 than on rank 0 (and a checkpoint kept rank 0's). After every step the
ranks now take the mean of their float buffers, each weighted by its share of the batch's
rows: an exponential average is linear, so the running mean is then one device's on the
whole batch exactly (the running variance misses the spread between the ranks' means).
"""

from __future__ import annotations

import numpy as np

__all__ = ["float_buffers", "average_buffers"]


def float_buffers(model) -> list:
    """The model's floating-point buffers (integer counters are equal on every rank)."""
    if not hasattr(model, "named_buffers"):
        return []
    return [b for _, b in model.named_buffers()
            if b is not None and getattr(b, "dtype", None) is not None
            and np.dtype(str(b.dtype)).kind == "f"]


def average_buffers(buffers, comm, weight: float | None = None) -> None:
    """Replace each buffer by its mean over ``comm``, this rank's weighted by ``weight``
    (its rows times the ranks over the batch's rows; None: an even split). One all-reduce."""
    if not buffers or comm.size == 1:
        return
    xp = buffers[0].xp
    w = 1.0 if weight is None else float(weight)
    flat = xp.concatenate([b._data.reshape(-1).astype(np.float64) * w for b in buffers]
                          + [xp.asarray([w], dtype=np.float64)])
    total = comm.allreduce(flat)
    total = total[:-1] / total[-1]
    off = 0
    for b in buffers:
        n = b._data.size
        b._data[...] = total[off:off + n].reshape(b._data.shape).astype(b._data.dtype)
        off += n

"""MoE layers on data-parallel ranks route over the whole batch, as one process does.

Each rank of a data-parallel (or expert-parallel) group holds rows ``r::size`` of the batch.
:func:`route_over` makes an :class:`.moe.MoE` layer's expert capacity and its Switch
load-balancing loss those of the whole batch: every rank's per-row counts of routed slots are
all-gathered, so an expert's queue is in the batch's token order and its capacity counts every
rank's tokens. The strategies set the group during a training step only
(:func:`share_batch`; an evaluation on one rank is its own batch).
"""

from __future__ import annotations

import math

import numpy as np

from .comm import Comm

__all__ = ["route_over", "share_batch", "unshare_batch"]


class _BatchGroup:
    """The data-parallel ranks whose shares make up the batch (rank ``r`` holds rows
    ``r::size`` of it, as the loader shards), ``weight()`` the factor the strategy scales
    this rank's loss by, ``ghost()`` whether this rank runs a stand-in row (no rows)."""

    def __init__(self, comm: Comm, weight=None, ghost=None, active=None):
        self.comm = comm
        self.weight = weight or (lambda: 1.0)
        self.ghost = ghost or (lambda: False)
        self.active = active or (lambda: True)  # in a training step (not an evaluation)


def route_over(probs: np.ndarray, top_k: int, capacity_factor: float, group: _BatchGroup,
               rows: int):
    """:func:`.moe.route` over the whole batch of the data-parallel ``group``, as one process
    routes it: the capacity counts every rank's tokens, and an expert's queue is in the
    batch's token order (row ``b`` of rank ``r`` is row ``b * size + r`` of the batch).
    Returns this rank's kept ``tok``, ``exp``, ``k``, the batch's per-expert counts of
    routed slots, the batch's token count, and whether this rank's rows are a stand-in."""
    comm, ghost = group.comm, bool(group.ghost())
    n, e = probs.shape
    per = n // max(1, rows)  # tokens per row
    top = np.argsort(-probs, axis=1, kind="stable")[:, :top_k]  # (N, k)
    tok = np.repeat(np.arange(n), top_k)
    exp = top.reshape(-1)
    kk = np.tile(np.arange(top_k), n)
    row = tok // max(1, per)
    mine = np.zeros((0 if ghost else rows, e), dtype=np.int64)
    if not ghost:
        np.add.at(mine, (row, exp), 1)
    flat, counts = comm.allgatherv(mine.reshape(-1))
    size, rank = comm.size, comm.rank
    n_rows = [int(c) // e for c in counts]
    batch = np.zeros((sum(n_rows), e), dtype=np.int64)
    off = 0
    for r, nr in enumerate(n_rows):
        batch[np.arange(nr) * size + r] = np.asarray(flat[off:off + nr * e]).reshape(nr, e)
        off += nr * e
    routed = batch.sum(axis=0)
    total = max(1, int(batch.shape[0] * per))
    if ghost:  # weight 0: nothing of this rank counts
        return tok, exp, kk, routed, total, True
    before = np.cumsum(batch, axis=0) - batch  # slots of each expert in earlier rows
    # position among this row's slots of the same expert, in token order
    key = row * e + exp
    order = np.argsort(key, kind="stable")
    starts = np.searchsorted(key[order], key[order], side="left")
    pos = np.empty_like(order)
    pos[order] = np.arange(order.size) - starts
    capacity = max(1, math.ceil(capacity_factor * total * top_k / e))
    keep = before[row * size + rank, exp] + pos < capacity
    return tok[keep], exp[keep], kk[keep], routed, total, False


def share_batch(model, comm: Comm, strategy) -> None:
    """Route every :class:`.moe.MoE` layer of ``model`` over the whole batch of the data-parallel
    ranks ``comm`` (capacity and load-balancing loss as one process on that batch)."""
    for m in model.modules() if hasattr(model, "modules") else ():
        if hasattr(type(m), "batch_group"):  # an MoE layer
            m.batch_group = None if comm.size == 1 else _BatchGroup(
                comm, weight=strategy.loss_weight, ghost=lambda: strategy.row_weight == 0,
                active=lambda: strategy.stepping)


def unshare_batch(model) -> None:
    """Each MoE layer of ``model`` routes its own tokens again (after training)."""
    for m in model.modules() if hasattr(model, "modules") else ():
        if hasattr(type(m), "batch_group"):
            m.batch_group = None

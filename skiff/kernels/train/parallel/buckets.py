"""Gradient buckets reduced during backward: all-reduced for data parallelism
(:class:`BucketReducer`), reduce-scattered into each rank's flat slice for ZeRO-2
(:class:`ShardReducer`).

Parameters are grouped in reverse registration order (roughly the order backward finishes
them) into buckets of about ``bucket_bytes``; each bucket is a run of consecutive parameters,
so it covers one contiguous range of the flat parameter vector. The moment the autograd engine
reports the last gradient of a bucket complete (``param.register_grad_ready_hook``) the
bucket is reduced. Every rank runs the same graph, so the buckets are reduced in the same
order everywhere; what a backward pass did not reach is reduced in a fixed order at the end.
"""

from __future__ import annotations

import numpy as np

from .comm import Comm

__all__ = ["BucketReducer", "ShardReducer", "make_buckets"]


def make_buckets(params: list, bucket_bytes: int) -> list[list]:
    """Consecutive runs of ``params`` (last first) of about ``bucket_bytes`` each."""
    buckets: list[list] = []
    current, size = [], 0
    for p in reversed(params):
        current.append(p)
        size += p._data.nbytes
        if size >= bucket_bytes:
            buckets.append(current)
            current, size = [], 0
    if current:
        buckets.append(current)
    return buckets


class BucketReducer:
    """Averages the gradients of ``params`` over ``comm`` in buckets, overlapped with backward.

    ``bucket_bytes`` sizes the buckets; ``overlap=False`` reduces every bucket in
    :meth:`finish` instead of from the gradient hooks.
    """

    def __init__(self, params, comm: Comm, *, bucket_bytes: int = 25 * 2**20,
                 overlap: bool = True):
        self.comm = comm
        self.overlap = overlap
        self.params = list(params)
        self.buckets = make_buckets(self.params, bucket_bytes)
        self.bucket_of = {id(p): i for i, b in enumerate(self.buckets) for p in b}
        self._ready = [set() for _ in self.buckets]
        self._inflight: list[tuple[int, np.ndarray, object]] = []
        self._launched = [0] * len(self.buckets)
        self._handles = []
        self.launch_log: list[int] = []  # bucket ids in launch order (for tests)
        # gradient bytes whose all-reduce started during backward (hooks) or after it
        self.bytes_early = 0
        self.bytes_late = 0
        self._in_finish = False
        if overlap and comm.size > 1:
            for p in self.params:
                self._handles.append(p.register_grad_ready_hook(self._on_ready))

    # the next bucket to launch in this backward pass: buckets go in index order on every
    # rank (as torch DDP launches them), whatever order backward completes them in, so
    # that ranks whose graphs differ (a branch taken on one rank's data only) still start
    # the same collectives in the same order
    _next = 0

    def _on_ready(self, p) -> None:
        for _, _, handle in self._inflight:  # let MPI move the buckets already in flight
            handle.test()
        b = self.bucket_of[id(p)]
        self._ready[b].add(id(p))
        while self._next < len(self.buckets) and \
                len(self._ready[self._next]) == len(self.buckets[self._next]):
            self._launch(self._next)
            self._next += 1

    def end_backward(self) -> None:
        """After each backward pass (every micro-batch): launch, in order, the buckets the
        pass left incomplete (parameters this rank's graph did not reach: zeros, flagged
        unused), so that every rank launches every bucket once per pass."""
        if not self._handles:
            return
        while self._next < len(self.buckets):
            self._launch(self._next)
            self._next += 1
        self._next = 0

    def _launch(self, b: int) -> None:
        params = self.buckets[b]
        xp = params[0].xp
        # one flag per parameter after its gradients: 1 when this rank has its gradient
        # (after the mean, > 0 when any rank had it)
        used = xp.asarray([0.0 if p._grad is None else 1.0 for p in params])
        buf = xp.concatenate([(p._grad if p._grad is not None else xp.zeros_like(p._data))
                              .reshape(-1) for p in params])
        if buf.dtype.itemsize < 4:  # 16-bit gradients (mixed precision) average in float32
            buf = buf.astype(np.float32)
        buf = xp.concatenate([buf, used.astype(buf.dtype)])
        for p in params:  # the next backward accumulates afresh; finish() adds them up
            p._grad = None
        self._inflight.append((b, buf, self.comm.iallreduce_(buf, "mean")))
        if self._in_finish:
            self.bytes_late += buf.nbytes
        else:
            self.bytes_early += buf.nbytes
        self._ready[b].clear()
        self._launched[b] += 1
        self.launch_log.append(b)

    def finish(self) -> None:
        """Launch the buckets not yet sent this step, wait for all, write back ``p.grad``."""
        if self.comm.size == 1:
            return
        self._in_finish = True
        if 0 < self._next < len(self.buckets):  # a pass whose end was not announced
            self.end_backward()
        self._next = 0
        for b, params in enumerate(self.buckets):
            if self._launched[b] == 0 or any(p._grad is not None for p in params):
                self._launch(b)
        self._in_finish = False
        sums: dict[int, np.ndarray] = {}
        for b, _buf, handle in self._inflight:
            out = handle.wait()
            sums[b] = out if b not in sums else sums[b] + out
        for b, buf in sums.items():
            params = self.buckets[b]
            used = buf[len(buf) - len(params):]
            buf = buf[:len(buf) - len(params)]
            if self.post_scale != 1.0:  # backward ran on loss / ranks: the sum is the mean
                buf = buf * self.post_scale
            off = 0
            for p, flag in zip(params, used.tolist()):
                # a parameter no rank's graph reached keeps no gradient, as on one device
                # (an optimizer skips it: no weight decay, no momentum step)
                p._grad = None if flag <= 0 else \
                    buf[off:off + p._data.size].reshape(p._data.shape)
                if p._grad is not None and self.post_scale != 1.0:  # one device's 16-bit
                    p._grad = _as_16_bit(p._grad, p._data.dtype)  # gradient: inf where it is
                off += p._data.size
        self._inflight.clear()
        self._launched = [0] * len(self.buckets)
        for r in self._ready:
            r.clear()

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    # what the averaged gradients are multiplied by (fp16: each rank's backward ran on its
    # loss divided by the ranks, so that its 16-bit gradients are its share of one device's)
    post_scale = 1.0


class ShardReducer:
    """ZeRO-2's gradient path: each bucket reduce-scattered into the ranks' flat slices.

    ``ranges[r] = (lo, hi)`` is rank r's slice of the flat vector of ``params``
    (concatenated in order); ``shard`` is this rank's optimizer parameter for its slice,
    whose ``grad`` receives the averaged gradient of its elements, summed over the backward
    passes of a step (gradient accumulation). A parameter's full gradient is copied into its
    bucket's buffer the moment it is complete and dropped; the buffer is reduce-scattered
    when the bucket is complete and dropped too. A rank so holds its slice, one bucket
    buffer being filled per backward pass in flight, and the gradient being produced.
    """

    def __init__(self, params, comm: Comm, ranges: list[tuple[int, int]], shard, *,
                 bucket_bytes: int = 25 * 2**20):
        self.comm = comm
        self.params = list(params)
        self.ranges = ranges
        self.shard = shard
        self.buckets = make_buckets(self.params, bucket_bytes)
        offsets = np.cumsum([0] + [p._data.size for p in self.params])
        index = {id(p): i for i, p in enumerate(self.params)}
        self.bucket_of = {id(p): b for b, ps in enumerate(self.buckets) for p in ps}
        # each bucket in flat order (its parameters ascending), its flat range, and where
        # each parameter sits in the bucket's buffer
        self.order = [sorted(ps, key=lambda p: index[id(p)]) for ps in self.buckets]
        self.spans = [(int(offsets[index[id(ps[0])]]), int(offsets[index[id(ps[-1])] + 1]))
                      for ps in self.order]
        self.slot = {id(p): int(offsets[index[id(p)]]) - self.spans[b][0]
                     for b, ps in enumerate(self.order) for p in ps}
        self._bufs: list = [None] * len(self.buckets)
        self._index = index
        # per parameter: whether this rank had its gradient in this step's passes; at
        # finish() ``reached``: whether any rank had it (ZeRO then does not step the others)
        self._used = np.zeros(len(self.params))
        self.reached = None
        self._ready = [set() for _ in self.buckets]
        self._reduced = [0] * len(self.buckets)
        self.launch_log: list[int] = []
        # gradient bytes reduced during backward (hooks) or after it
        self.bytes_early = 0
        self.bytes_late = 0
        self._in_finish = False
        self._handles = []
        if comm.size > 1:
            for p in self.params:
                self._handles.append(p.register_grad_ready_hook(self._on_ready))

    def counts(self, b: int) -> list[int]:
        """How many elements of bucket ``b`` each rank owns."""
        lo, hi = self.spans[b]
        return [max(0, min(hi, r_hi) - max(lo, r_lo)) for r_lo, r_hi in self.ranges]

    def _take(self, b: int, p) -> None:
        """Move ``p.grad`` into bucket ``b``'s buffer (adding to what is there)."""
        if p._grad is None:
            return
        self._used[self._index[id(p)]] = 1.0
        if self._bufs[b] is None:
            lo, hi = self.spans[b]
            self._bufs[b] = p.xp.zeros(hi - lo, dtype=p._grad.dtype)
        at = self.slot[id(p)]
        self._bufs[b][at:at + p._data.size] += p._grad.reshape(-1)
        p._grad = None

    _next = 0  # as BucketReducer: buckets reduced in index order on every rank

    def _on_ready(self, p) -> None:
        b = self.bucket_of[id(p)]
        self._take(b, p)
        self._ready[b].add(id(p))
        while self._next < len(self.buckets) and \
                len(self._ready[self._next]) == len(self.buckets[self._next]):
            self._reduce(self._next)
            self._next += 1

    def end_backward(self) -> None:
        """After each backward pass: reduce, in order, the buckets it left incomplete."""
        if not self._handles:
            return
        while self._next < len(self.buckets):
            self._reduce(self._next)
            self._next += 1
        self._next = 0

    def _reduce(self, b: int) -> None:
        for p in self.order[b]:
            self._take(b, p)
        buf, self._bufs[b] = self._bufs[b], None
        if buf is None:  # no gradient reached this bucket: its zeros still take part
            lo, hi = self.spans[b]
            buf = self.shard.xp.zeros(hi - lo, dtype=self.shard._data.dtype)
        if self._in_finish:
            self.bytes_late += int(buf.nbytes)
        else:
            self.bytes_early += int(buf.nbytes)
        counts = self.counts(b)
        mine = self.comm.reduce_scatter_v(buf, counts, "mean")
        del buf
        me = self.comm.rank
        if counts[me]:
            start = max(self.spans[b][0], self.ranges[me][0]) - self.ranges[me][0]
            if self.shard._grad is None:
                self.shard._grad = self.shard.xp.zeros_like(self.shard._data)
            self.shard._grad[start:start + counts[me]] += mine
        self._ready[b].clear()
        self._reduced[b] += 1
        self.launch_log.append(b)

    def finish(self) -> None:
        """Reduce the buckets this step has not reduced yet (parameters backward did not
        reach, or a run without hooks), in a fixed order; then ``shard.grad`` is complete."""
        self._in_finish = True
        if 0 < self._next < len(self.buckets):  # a pass whose end was not announced
            self.end_backward()
        self._next = 0
        for b, params in enumerate(self.order):
            if self.comm.size == 1 or self._reduced[b] == 0 or self._bufs[b] is not None or \
                    any(p._grad is not None for p in params):
                self._reduce(b)
        self._in_finish = False
        used = self._used if self.comm.size == 1 else self.comm.allreduce(self._used, "max")
        self.reached = np.asarray(used) > 0
        self._used = np.zeros(len(self.params))
        if self.shard._grad is None:
            self.shard._grad = self.shard.xp.zeros_like(self.shard._data)
        elif self.post_scale != 1.0:  # and rounded as one device's 16-bit gradient
            g = _as_16_bit(self.shard._grad * self.post_scale, self.params[0]._data.dtype)
            self.shard._grad = g.astype(self.shard._data.dtype)
        self._reduced = [0] * len(self.buckets)
        for r in self._ready:
            r.clear()

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    post_scale = 1.0  # as BucketReducer.post_scale


def _as_16_bit(grad, dtype):
    """``grad`` (averaged in float32) in the parameters' 16-bit ``dtype``: inf where one
    device's gradient of the whole batch would overflow, so that every rank skips that step
    with it (fp16-mixed; the scaler halves the scale)."""
    with np.errstate(over="ignore"):
        return grad.astype(dtype)

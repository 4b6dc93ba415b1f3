"""Elementwise CPU work split over the threads the process gave its math libraries.

BLAS runs a GEMM on every thread it was given, but an elementwise pass (an activation, a
log-softmax, an im2col copy) runs on one: on a 2-core machine half the machine idles
through it. :func:`split_range` cuts ``range(n)`` into at most :func:`work_threads`
contiguous pieces and runs ``fn(lo, hi)`` on each, one on the calling thread and the rest
on a small shared pool. ``fn`` must release the GIL for the pieces to overlap (numpy copies
and ufuncs on large arrays do; numba kernels compiled with ``nogil=True`` do) and must write
disjoint outputs per piece.

Pieces start at multiples of ``align`` so that a kernel that works in blocks cuts its blocks
where one call would. A numpy pass over pieces gives the same bits as one pass; a numba loop
vectorised under fastmath may differ in the last bit on some elements, as it already does
between two calls whose arrays lie at other alignments (peeled iterations run scalar).

The thread count follows ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` (a benchmark that
gives skiff and its peer one thread each gets one here too), else the cores this process may
run on; :func:`set_work_threads` overrides it (an MPI rank's share of the cores).
Work below ``min_size`` elements a piece runs inline: a hand-off costs tens of microseconds.
A call from inside a pool thread runs inline too, so nesting can never wait on itself.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .devices import cpu_count

__all__ = ["split_range", "split_rows", "work_threads", "set_work_threads"]

MIN_SIZE = 1 << 16  # elements per piece below which a hand-off costs more than it saves

_override: int | None = None
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()
_inside = threading.local()


def work_threads() -> int:
    """Threads for elementwise work: :func:`set_work_threads`'s value, else the first of
    ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` that is set, else the usable cores; never
    more than the usable cores."""
    cores = cpu_count()
    if _override is not None:
        return max(1, min(_override, cores))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        value = os.environ.get(var, "").strip()
        if value.isdigit() and int(value) > 0:
            return min(int(value), cores)
    return cores


def set_work_threads(n: int | None) -> None:
    """Use ``n`` threads for elementwise work from now on (None: back to the environment)."""
    global _override
    _override = None if n is None else max(1, int(n))


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="skiff-split",
                                       initializer=_mark_inside)
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _mark_inside() -> None:
    _inside.active = True


def pieces(n: int, parts: int, align: int = 1) -> list[tuple[int, int]]:
    """``range(n)`` as ``parts`` contiguous ``(lo, hi)`` pieces of near-equal size whose
    inner bounds are multiples of ``align`` (fewer pieces when ``n`` is short)."""
    align = max(1, int(align))
    blocks = -(-n // align)
    parts = max(1, min(parts, blocks))
    bounds = [min(n, (blocks * k // parts) * align) for k in range(parts + 1)]
    bounds[-1] = n
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


def split_range(fn, n: int, *, align: int = 1, min_size: int = MIN_SIZE,
                threads: int | None = None) -> None:
    """Run ``fn(lo, hi)`` over pieces of ``range(n)`` on up to ``threads`` (default
    :func:`work_threads`) threads, the calling one included; returns when all have ended,
    raising the first piece's error."""
    most = n // max(1, min_size)  # small work (most calls) returns before any lookup
    if most <= 1 or getattr(_inside, "active", False):
        if n > 0:
            fn(0, n)
        return
    threads = work_threads() if threads is None else max(1, int(threads))
    parts = min(threads, most)
    if parts <= 1:
        if n > 0:
            fn(0, n)
        return
    spans = pieces(n, parts, align)
    if len(spans) == 1:
        fn(*spans[0])
        return
    pool = _executor(len(spans) - 1)
    futures = [pool.submit(fn, lo, hi) for lo, hi in spans[1:]]
    error = None
    try:
        fn(*spans[0])
    except BaseException as exc:  # the other pieces still end before this returns
        error = exc
    for fut in futures:
        try:
            fut.result()
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error


def split_rows(fn, rows: int, size: int) -> None:
    """:func:`split_range` over the ``rows`` slices of a leading axis (channels, batch rows)
    of arrays that hold ``size`` elements in all: a piece takes at least ``MIN_SIZE`` of them.
    ``fn(lo, hi)`` works on ``a[lo:hi]`` of each array."""
    split_range(fn, rows, min_size=max(1, MIN_SIZE * rows // max(size, 1)))

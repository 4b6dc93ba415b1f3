"""A dataset with no length: a generator, an iterator or an ``IterableDataset`` (torch's or
``skiff.utils.data``'s), read into a list of its samples for one ``train``/``evaluate``/
``predict`` call.

Round 42 (h5): it is also read only up to half the memory the machine has free, at the
first sample's size (an endless stream of images filled gigabytes before the sample count
refused it).

Its items are samples, as a torch ``DataLoader`` over an ``IterableDataset`` takes them
(``(x, y)`` tuples, dicts, or single arrays), batched by the Trainer at its ``batch_size``.
An ``IterableDataset`` is read again at each epoch of ``train`` (:class:`EpochReads`, round
44 h11: torch's DataLoader calls its ``__iter__`` each epoch); a generator, used up by one
pass, and a stream cut by ``val_split`` are read once and replayed (said). A stream longer
than :data:`STREAM_LIMIT` samples (an endless generator) is refused in one line naming the
fix (``itertools.islice(stream, n)``, or a dataset with ``__len__``/``__getitem__``), except
under ``train(..., steps=N)``, which reads only the samples its steps use (transformers'
``max_steps`` over an ``IterableDataset``; round 38).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from collections.abc import Iterator

import numpy as np

__all__ = ["is_stream", "read_stream", "STREAM_LIMIT", "EpochReads", "reread_each_epoch",
           "has_state", "dataset_state"]

STREAM_LIMIT = 1 << 22  # samples read from a stream at most (4,194,304)


def is_stream(data) -> bool:
    """Whether ``data`` is iterable but has no length or items (what a stream is)."""
    if data is None or isinstance(data, (str, bytes, dict)):
        return False
    if hasattr(data, "__len__") and hasattr(data, "__getitem__"):
        return False
    return hasattr(data, "__iter__")


def read_stream(data, *, what: str = "dataset", limit: int = STREAM_LIMIT,
                take: int | None = None) -> list:
    """The samples of the stream ``data`` as a list (at most ``limit``); ``take``: its first
    ``take`` samples (what a training of so many steps uses), never refused as endless."""
    name = type(data).__name__
    if take is not None:
        items = list(itertools.islice(iter(data), min(int(take), limit)))
    else:
        it = iter(data)
        items = list(itertools.islice(it, 1))
        # a bound in memory too, at the first sample's size (round 42 h5): an endless
        # stream of images was read up to `limit` samples, gigabytes, before the refusal
        per = _nbytes(items[0]) if items else 0
        avail = _available_bytes()
        room = None if avail is None else avail // 2
        cap = limit if not per or room is None else max(1, min(limit, room // per))
        items += itertools.islice(it, cap)
        if len(items) > cap and cap < limit:
            raise ValueError(
                f"the {what} ({name}) yields more than {cap:,} samples of "
                f"{per / 2**20:.3g} MiB, half the memory this machine has free "
                f"({room * 2 / 2**30:.3g} GiB; an endless stream?): pass "
                "itertools.islice(stream, n) for the first n, train(..., steps=N) (reads "
                "what its steps use), or a dataset with __len__ and __getitem__")
    if not items:
        raise ValueError(f"the {what} ({name}) yielded no samples; a generator is used up "
                         "by the first call that reads it: make a new one for each call "
                         "(or pass an IterableDataset, whose __iter__ starts again)")
    if len(items) > limit:
        # the way out the memory bound's line names too (round 43 h5: this one left out
        # steps=N, which reads only what the steps use, an endless stream's usual cure)
        raise ValueError(f"the {what} ({name}) yields more than {limit:,} samples (an endless "
                         "stream?): pass itertools.islice(stream, n) for the first n, "
                         "train(..., steps=N) (reads what its steps use), or a dataset with "
                         "__len__ and __getitem__")
    rows = _batch_rows(items[0])
    if rows is not None and all(_batch_rows(item) is not None for item in items[:8]):
        warnings.warn(f"the {what} ({name}) yields items whose arrays all have {rows} rows, "
                      "like (X, y) batches; they are taken as samples, as torch's DataLoader "
                      "takes an IterableDataset's items (a batch of them stacks the batches): "
                      "for batches pass the arrays, train((np.concatenate(xs), "
                      "np.concatenate(ys)))", stacklevel=4)
    return items


def reread_each_epoch(data) -> bool:
    """Whether the stream ``data`` starts again at each ``iter()``: an ``IterableDataset``
    (torch's, skiff's, a class with ``__iter__``) does; a generator or another iterator is
    used up by one pass (round 44 h11)."""
    return is_stream(data) and not isinstance(data, Iterator)


class EpochReads:
    """A stream's samples, read again at the start of each epoch (round 44 h11).

    torch's ``DataLoader`` over an ``IterableDataset`` calls its ``__iter__`` at every epoch:
    a dataset that draws random augmentations, seeds a generator by the pass or reshuffles
    its shards gives each epoch others. The Trainer read one pass and replayed it. Now
    :meth:`to` reads the pass of ``epoch`` into ``items`` (the list the Trainer's loader
    indexes, filled in place), calling ``set_epoch(epoch)`` first where the dataset has one
    (Hugging Face datasets' ``IterableDataset``; transformers' Trainer calls it each epoch).
    A resumed run reads its epoch's pass again and goes on after the batches the checkpoint
    had taken, as transformers skips them.

    Round 45 (h5): a pass may yield another number of samples than the one before (a stream
    that filters, or draws its length): an epoch is one pass however long, as torch's loop
    takes it, and ``on_pass`` (the Trainer's re-plan of the run's end) is called after each
    pass read (it was refused: the steps were planned from the first pass). ``first``: the
    first pass's length."""

    def __init__(self, source, items: list, epoch: int = 0, start_state=None):
        self.source, self.items, self.epoch = source, items, int(epoch)
        self.first = len(items)
        self.on_pass = None  # called with no arguments after a pass of epoch > 0 is read
        # a dataset of torchdata's StatefulDataLoader convention (state_dict() and
        # load_state_dict()): its state where this pass began (round 45 h5), what a
        # checkpoint keeps; ``pending``: a checkpoint's, put back before its pass is read
        self.start_state, self.pending = start_state, None
        self.resized = False  # a resumed pass of another length than the checkpoint's
        # data-parallel ranks (round 46 h7): ``agree(epoch, n)`` gives the samples every rank
        # reads of this pass, the shortest rank's count (each rank's read differing in length
        # planned other ends per rank, and the longer rank waited in an all-reduce for ever)
        self.agree = None

    def state(self) -> dict | None:
        """What a checkpoint keeps: the dataset's state at the start of the pass ``items``
        holds, and its epoch (None: a dataset without ``state_dict``)."""
        if self.start_state is None:
            return None
        return {"epoch": self.epoch, "state": self.start_state}

    def to(self, epoch: int, *, replan: bool = True) -> None:
        """``items`` holds epoch ``epoch``'s pass (read now unless it does already; a
        checkpoint's dataset state for it, ``pending``, is put back first and the pass read
        again)."""
        pending, self.pending = self.pending, None
        restore = isinstance(pending, dict) and int(pending.get("epoch", -1)) == int(epoch) \
            and pending.get("state") is not None and has_state(self.source)
        if int(epoch) == self.epoch and not restore:
            return
        set_epoch(self.source, epoch)
        if restore:  # the pass the checkpoint's run read, from the state it began in
            self.source.load_state_dict(pending["state"])
        self.start_state = dataset_state(self.source)
        fresh = list(itertools.islice(iter(self.source), STREAM_LIMIT + 1))
        name = type(self.source).__name__
        if self.agree is not None:  # data-parallel ranks: the shortest pass (round 46 h7)
            fresh = fresh[:self.agree(int(epoch), len(fresh))]
        if not fresh:
            raise ValueError(f"the dataset ({name}) yielded no samples in epoch "
                             f"{int(epoch) + 1} (its __iter__ is called again each epoch, as "
                             "torch's DataLoader calls it): a pass must yield samples")
        if len(fresh) > STREAM_LIMIT:
            raise ValueError(f"the dataset ({name}) yields more than {STREAM_LIMIT:,} samples "
                             f"in epoch {int(epoch) + 1} (an endless stream?): pass "
                             "train(..., steps=N) (reads what its steps use)")
        self.items[:] = fresh
        self.epoch = int(epoch)
        if replan and self.on_pass is not None:
            self.on_pass()


def has_state(source) -> bool:
    """Whether ``source`` keeps its state as torchdata's ``StatefulDataLoader`` reads a
    dataset's: ``state_dict()`` and ``load_state_dict(state)``."""
    return callable(getattr(source, "state_dict", None)) and \
        callable(getattr(source, "load_state_dict", None))


def dataset_state(source):
    """A copy of ``source.state_dict()`` where it has one (:func:`has_state`), else None."""
    if not has_state(source):
        return None
    import copy

    return copy.deepcopy(source.state_dict())


def set_epoch(source, epoch: int) -> None:
    """``source.set_epoch(epoch)`` where it has one (Hugging Face's ``IterableDataset``)."""
    method = getattr(source, "set_epoch", None)
    if callable(method):
        method(int(epoch))


def _nbytes(item) -> int:
    """The bytes a sample holds in memory (a tuple, list or dict of arrays, or one): the
    arrays' data and the Python objects around it (round 44 h5: the data alone, 16 bytes
    for samples of 3 + 1 float32, where the list of them held ~440 each: 4,194,304 samples
    read, 1.8 GB, the memory bound counted 64 MB)."""
    if isinstance(item, dict):
        return sys.getsizeof(item) + sum(_nbytes(v) for v in item.values())
    if isinstance(item, (tuple, list)):
        return sys.getsizeof(item) + sum(_nbytes(v) for v in item)
    data = int(getattr(item, "nbytes", 0) or 0)
    if hasattr(item, "shape"):  # an array's or a tensor's own object, beside its data
        return data + _ARRAY_OBJECT
    return data or sys.getsizeof(item)


_ARRAY_OBJECT = sys.getsizeof(np.empty(0))  # a numpy array's object without its data


def _available_bytes() -> int | None:
    """The memory the machine has available now (Linux's ``MemAvailable``), None elsewhere."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _batch_rows(item):
    """The shared row count when ``item`` looks like an ``(X, y)`` batch rather than a sample:
    two or more arrays, all with the same leading length, not all integer (a token sequence
    and its shifted targets, (T,) and (T,), are a sample)."""
    if not isinstance(item, (tuple, list)) or len(item) < 2:
        return None
    shapes = [getattr(a, "shape", None) for a in item]
    if any(s is None or len(s) == 0 for s in shapes) or len({s[0] for s in shapes}) != 1:
        return None
    kinds = {getattr(getattr(a, "dtype", None), "kind", "f") for a in item}
    return None if kinds <= {"i", "u", "b"} or shapes[0][0] < 2 else int(shapes[0][0])

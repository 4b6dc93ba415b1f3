"""One metric's points, ``(step, value, t)``, held in flat arrays.

A job's state keeps every metric point of the job it follows. As Python tuples each point
cost ~150 bytes (a tuple, an int, two floats): a 1,000,000-step training with three metrics
held ~450 MB in the kernel that followed it (round 42). :class:`Series` holds them in
``array`` columns (8 + 8 + 8 + 1 bytes a point) and reads back the very tuples it was given:
an int value or step stays an int, a missing step or time stays None, and a point that does
not fit the columns (a step past 64 bits, an int value a float would round, a value of
another type) is kept as it came.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

__all__ = ["Series", "with_history"]

_NO_STEP, _INT_VALUE, _NO_TIME = 1, 2, 4
_LOW, _HIGH = -(2 ** 63), 2 ** 63


class Series(Sequence):
    """A list-like of ``(step, value, t)`` that :meth:`append` grows; indexing, slices
    (lists of tuples), ``len``, iteration and ``==`` with a list read as the list would."""

    __slots__ = ("_steps", "_values", "_times", "_flags", "_odd")

    def __init__(self, points=()):
        self._steps = array("q")
        self._values = array("d")
        self._times = array("d")
        self._flags = array("B")
        self._odd: dict[int, tuple] = {}  # position -> a point the columns cannot hold
        for point in points:
            self.append(point)

    def append(self, point) -> None:
        step, value, t = point
        flags = 0
        fits = True
        if step is None:
            flags |= _NO_STEP
            step = 0
        elif type(step) is not int or not _LOW <= step < _HIGH:
            fits = False
        if type(value) is int:
            flags |= _INT_VALUE
            fits = fits and -(2 ** 53) <= value <= 2 ** 53  # exact as a float
        elif type(value) is not float:
            fits = False
        if t is None:
            flags |= _NO_TIME
            t = 0.0
        elif type(t) is not float:
            fits = False
        if not fits:
            self._odd[len(self._flags)] = tuple(point)
            step, value, t, flags = 0, 0.0, 0.0, 0
        self._steps.append(step)
        self._values.append(value)
        self._times.append(t)
        self._flags.append(flags)

    def __len__(self) -> int:
        return len(self._flags)

    def _point(self, i: int) -> tuple:
        if self._odd:
            odd = self._odd.get(i)
            if odd is not None:
                return odd
        flags = self._flags[i]
        value = self._values[i]
        return (None if flags & _NO_STEP else self._steps[i],
                int(value) if flags & _INT_VALUE else value,
                None if flags & _NO_TIME else self._times[i])

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._point(i) for i in range(*index.indices(len(self)))]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError("series index out of range")
        return self._point(i)

    def __iter__(self):
        if self._odd:
            yield from (self._point(i) for i in range(len(self)))
            return
        for step, value, t, flags in zip(self._steps, self._values, self._times, self._flags):
            yield (None if flags & _NO_STEP else step,
                   int(value) if flags & _INT_VALUE else value,
                   None if flags & _NO_TIME else t)

    def __eq__(self, other) -> bool:
        if isinstance(other, (Series, list, tuple)):
            return len(self) == len(other) and all(
                _same_point(a, b) for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return repr(list(self))

    def nbytes(self) -> int:
        """Bytes the columns hold (the odd points not counted)."""
        return sum(a.itemsize * len(a) for a in (self._steps, self._values, self._times,
                                                 self._flags))


def _same(a, b) -> bool:
    # A list of points compares each point's parts by identity first: the NaN it holds is
    # equal to itself there. A Series reads a new float each time, so a NaN is compared
    # by what it is (NaN at the same place of both points is the same part).
    return a is b or a == b or (isinstance(a, float) and isinstance(b, float) and a != a and b != b)


def _same_point(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not tuple or type(b) is not tuple or len(a) != len(b):
        return a == b
    return all(_same(x, y) for x, y in zip(a, b))


def with_history(metrics: dict, result) -> dict:
    """``metrics`` with each series that a finished job's ``result`` (``result.json``) holds
    more points of, read from its ``history`` and ``val_history`` rows (``{"step": 2,
    "lr": 0.001, ...}``): a training writes every row's loss as an event but only samples its
    lr, throughput and gradient norm (at most 10 a second), so a 20-step job's events held 2
    points of its lr and its chart missed the warm-up's peak at step 2 (round 44). Only the
    names ``metrics`` has are looked at (a row's ``epoch`` does not become a chart); the
    others, and a result without such rows, are left as they are. Never raises."""
    if not isinstance(result, dict) or not metrics:
        return metrics
    whole: dict[str, list] = {}
    for key in ("history", "val_history"):
        rows = result.get(key)
        if not isinstance(rows, list):
            continue
        for row in rows:
            if not isinstance(row, dict):
                continue
            step = row.get("step")
            if type(step) is not int:
                continue
            for name, value in row.items():
                if name in metrics and name != "step" and not isinstance(value, bool) \
                        and isinstance(value, (int, float)):
                    whole.setdefault(name, []).append((step, value, None))
    if not whole:
        return metrics
    out = dict(metrics)
    for name, points in whole.items():
        if len(points) > len(metrics[name]):
            points.sort(key=lambda p: p[0])
            out[name] = points
    return out

"""The batched tensor of :mod:`.vmap_r30`: one sample's shape over a physical tensor whose
axis 0 is the batch, the levels of the batched calls running, and the helpers the rules share
(:mod:`.vmap_r30`, :mod:`.vmap_rules_r30`, :mod:`.vmap_grad_r30`)."""

from __future__ import annotations

import collections

import numpy as np

from .tensor import Tensor, _Size
from .torch_size import Size


class NotBatchable(BaseException):
    """Raised where a batched call cannot go on (a raw array read, a random draw): ``vmap``
    then runs the function as a loop. A BaseException, so a broad ``except Exception`` in
    the mapped code does not swallow it."""


LOOPED: collections.Counter = collections.Counter()
_LEVELS: list = []  # (level, batch size) of the batched calls running, innermost last


def current_level():
    """``(level, batch size)`` of the innermost batched call running, or None."""
    return _LEVELS[-1] if _LEVELS else None


def _refuse(*_a, **_k):
    raise NotBatchable("a raw array or a random draw inside a batched vmap call")


class BatchedTensor(Tensor):
    """A tensor of one sample's shape over ``_phys`` (the batch on axis 0) at ``_level``."""

    _data = property(_refuse, _refuse)
    _node = property(_refuse, _refuse)
    _grad = property(lambda self: None, _refuse)

    def __new__(cls, phys=None, level=None, *args, **kwargs):
        if isinstance(level, int) and isinstance(phys, Tensor) and not (args or kwargs):
            return super().__new__(cls)
        # ``type(x)(data, ...)`` in code that builds a new, unbatched tensor like ``x``
        return Tensor(*((phys,) if level is None else (phys, level)), *args, **kwargs)

    def __init__(self, phys, level):  # noqa: D107 - no Tensor.__init__: nothing of its own
        self.__dict__["_phys"] = phys
        self.__dict__["_level"] = level

    def _on_phys(self, fn):
        """``fn`` of the physical tensor, batched at this level (elementwise functions)."""
        return BatchedTensor(fn(self._phys), self._level)

    @property
    def requires_grad(self):
        return self._phys.requires_grad

    @requires_grad.setter
    def requires_grad(self, _value):
        raise NotBatchable("requires_grad set on a batched tensor")

    @property
    def shape(self) -> tuple:
        return tuple.__new__(Size, self._phys.shape[1:])  # torch's ``Size`` (round 45 h7)

    @property
    def ndim(self) -> int:
        return self._phys.ndim - 1

    @property
    def dtype(self):
        return self._phys.dtype

    @property
    def device(self):
        return self._phys.device

    @property
    def xp(self):
        return self._phys.xp

    @property
    def size(self):
        shape = self.shape
        return _Size(int(np.prod(shape, dtype=np.int64)), shape)

    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def dim(self) -> int:
        return self.ndim

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"BatchedTensor(level={self._level}, shape={self.shape}, value={self._phys!r})"

    def detach(self):
        return BatchedTensor(self._phys.detach(), self._level)

    _batched = True  # Tensor._cmp and where() hand a batched operand to it

    def _cmp(self, o, op):
        return self._compare([self, o], op)

    def _rcmp(self, o, op):
        """``op(o, self)`` for an ``o`` that is not batched here."""
        return self._compare([o, self], op)

    def _compare(self, pair, op):
        level = max(x._level for x in pair if isinstance(x, BatchedTensor))
        raw = [a._data if isinstance(a, Tensor) else a for a in _aligned(pair, level)]
        return BatchedTensor(Tensor._make(op(*raw), False, None, 0), level)

    def argmax(self, axis=None, *, dim=None, keepdim=False):
        return self._arg("argmax", axis if dim is None else dim, keepdim)

    def argmin(self, axis=None, *, dim=None, keepdim=False):
        return self._arg("argmin", axis if dim is None else dim, keepdim)

    def _arg(self, name, axis, keepdim):
        a = self._phys._data
        fn = getattr(self.xp, name)
        if axis is None:
            idx = fn(a.reshape(a.shape[0], -1), axis=1)
            if keepdim:
                idx = idx.reshape((a.shape[0],) + (1,) * self.ndim)
        else:
            ax = int(axis) % max(self.ndim, 1) + 1
            idx = fn(a, axis=ax)
            if keepdim:
                idx = self.xp.expand_dims(idx, ax)
        return BatchedTensor(Tensor._make(idx, False, None, 0), self._level)

    def __invert__(self):
        return BatchedTensor(~self._phys, self._level)


def is_batched(x, level=None) -> bool:
    return isinstance(x, BatchedTensor) and (level is None or x._level == level)


def batched_here(*xs) -> bool:
    """Whether a batched call runs and one of ``xs`` is batched at its innermost level."""
    return bool(_LEVELS) and any(is_batched(x, _LEVELS[-1][0]) for x in xs)


def indices_along(x, dim, keep, node, arg):
    """``x.max(dim)``/``x.min(dim)`` of a batched ``x``: the values by ``node`` and the
    indices by ``arg`` (numpy's argmax/argmin, the first of ties as torch's) on the
    physical array."""
    nd = x.ndim
    values = node.apply(x, axis=dim, keepdims=keep)
    ax = int(dim) % max(nd, 1) + 1
    idx = arg(x._phys._data, axis=ax)
    if keep:
        idx = x.xp.expand_dims(idx, ax)
    return values, BatchedTensor(Tensor._make(idx, False, None, 0), x._level)


def _size_at(level):
    for lv, n in _LEVELS:
        if lv == level:
            return n
    raise NotBatchable(f"a batched tensor of level {level} outside its vmap call")


def _lnd(x) -> int:
    """The logical number of axes of an operand (0 for a number)."""
    if isinstance(x, Tensor):
        return x.ndim
    return getattr(x, "ndim", 0)


def _aligned(items, level, nd=None):
    """Each operand batched at ``level`` as its physical tensor with axes of length one put
    before its own, so that numpy's broadcasting of the physical arrays is the logical one's
    with the batch in front; the others as they are."""
    if nd is None:
        nd = max(_lnd(x) for x in items)
    out = []
    for x in items:
        if is_batched(x, level):
            p = x._phys
            k = nd - x.ndim
            if k:
                p = p.reshape((p.shape[0],) + (1,) * k + tuple(p.shape[1:]))
            out.append(p)
        else:
            out.append(x)
    return out

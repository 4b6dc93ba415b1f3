"""Round 44 (h12): ``adaptive_max_pool1d/2d/3d(return_indices=True)`` (torch's; was a
NotImplementedError for 2-D and 3-D): each output's index is the flat position of its bin's
maximum in the input's spatial plane (``h * W + w``, ``(d * H + h) * W + w``), the first one
on a tie, as torch's CPU kernel; the values are the input gathered there, so the gradient goes
to that one element (torch's) and the indices feed ``max_unpool``."""

from __future__ import annotations

import itertools

import numpy as np

from ..autograd import xp_of

__all__ = ["adaptive_max_with_indices"]


def _bins(n, out):
    return [(i * n // out, -(-(i + 1) * n // out)) for i in range(out)]


def adaptive_max_with_indices(x, out):
    """``(values, indices)`` of the adaptive max pool of ``x`` over its last ``len(out)``
    axes to the sizes ``out`` (each already resolved to an int)."""
    from ..tensor import Tensor

    k = len(out)
    arr = x._data
    xp = xp_of(arr)
    sizes = arr.shape[-k:]
    lead = arr.shape[:-k]
    strides = [int(np.prod(sizes[i + 1:])) for i in range(k)]
    idx = xp.empty(lead + tuple(out), dtype=np.int64)
    for pos in itertools.product(*(list(enumerate(_bins(n, o))) for n, o in zip(sizes, out))):
        sl = tuple(slice(s, e) for _, (s, e) in pos)
        win = arr[(Ellipsis,) + sl]
        wshape = win.shape[-k:]
        local = xp.argmax(win.reshape(lead + (-1,)), axis=-1)
        flat = 0
        for i, (_, (s, _e)) in enumerate(pos):
            coord = (local // int(np.prod(wshape[i + 1:]))) % wshape[i] + s
            flat = flat + coord * strides[i]
        idx[(Ellipsis,) + tuple(j for j, _ in pos)] = flat
    ind = Tensor(idx)
    vals = x.flatten(-k).gather(-1, ind.flatten(-k)).reshape(*lead, *out)
    return vals, ind

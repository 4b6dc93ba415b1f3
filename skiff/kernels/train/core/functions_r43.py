"""torch's top-level ``segment_reduce`` and ``empty_strided`` (round 43).

``segment_reduce(data, reduce, lengths=|offsets=, axis=0, unsafe=False, initial=None)``
reduces consecutive runs of ``data`` along ``axis`` (the usual per-graph pooling of batched
graphs): ``sum``, ``mean``, ``prod``, ``max``/``amax``, ``min``/``amin``, an empty segment
giving the reduction's identity (0, 1, nan for ``mean``, -inf/inf) or ``initial``;
differentiable in ``data`` (each segment is the tensor reduction of its slice, so ties of
``max`` share the gradient as torch's ``amax``)."""

from __future__ import annotations

import numpy as np

from .tensor import Tensor, stack, zeros

__all__ = ["segment_reduce", "empty_strided"]

_REDUCE = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "amax", "amax": "amax",
           "min": "amin", "amin": "amin"}
_EMPTY = {"sum": 0.0, "mean": float("nan"), "prod": 1.0, "amax": -np.inf, "amin": np.inf}


def _ints(t) -> np.ndarray:
    return np.asarray(t.numpy() if isinstance(t, Tensor) else t).astype(np.int64)


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
                   unsafe=False, initial=None):
    """torch's ``segment_reduce`` (above): one output row per segment along ``axis``."""
    if indices is not None:
        raise NotImplementedError("segment_reduce(indices=) is not implemented (torch's is not "
                                  "either): give lengths= or offsets=")
    op = _REDUCE.get(reduce)
    if op is None:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if data.dtype.kind not in "fc":
        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for {data.dtype}')
    if lengths is not None:
        lens = _ints(lengths)
        if lens.ndim != 1:
            raise NotImplementedError("segment_reduce with lengths of more than one dimension "
                                      "is not implemented here: give 1-D lengths")
        if (lens < 0).any():
            raise RuntimeError("lengths contains negative value!")
        starts = np.concatenate([[0], np.cumsum(lens)])
    elif offsets is not None:
        starts = _ints(offsets)
        if starts.ndim != 1:
            raise NotImplementedError("segment_reduce with offsets of more than one dimension "
                                      "is not implemented here: give 1-D offsets")
    else:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if axis != 0 and axis != -data.ndim:  # torch's: the last dimension of 1-D lengths
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"{'lengths' if lengths is not None else 'offsets'} but got {axis}.")
    axis = 0
    n = data.shape[axis]
    if not unsafe and (starts[0] != 0 or starts[-1] != n or (np.diff(starts) < 0).any()):
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                           "to data.size(lengths.dim()-1) when !unsafe.")
    rows = []
    for lo, hi in zip(starts[:-1].tolist(), starts[1:].tolist()):
        if hi <= lo:
            fill = _EMPTY[op] if initial is None else initial
            row = data.select(axis, 0).detach() * 0 + fill if n else None
            if row is None:  # an empty data tensor: the fill in the row's shape
                shape = tuple(s for i, s in enumerate(data.shape) if i != axis)
                row = Tensor(np.full(shape, fill, dtype=data.dtype), dtype=data.dtype)
            rows.append(row)
            continue
        part = data.narrow(axis, lo, hi - lo)
        if op == "mean":
            row = part.sum(axis)
            row = (row + initial) / (hi - lo) if initial is not None else row / (hi - lo)
        else:
            row = getattr(part, op)(axis)
            if initial is not None:
                row = {"sum": lambda r: r + initial, "prod": lambda r: r * initial,
                       "amax": lambda r: r.clamp(min=initial),
                       "amin": lambda r: r.clamp(max=initial)}[op](row)
        rows.append(row)
    if not rows:
        shape = list(data.shape)
        shape[axis] = 0
        return Tensor(np.zeros(shape, dtype=data.dtype), dtype=data.dtype)
    return stack(rows, axis)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """torch's ``empty_strided``: a zero tensor of ``size`` (skiff hands out no uninitialised
    memory; ``stride`` is the memory order torch would use, which numpy arrays of skiff hold
    contiguously: the values and shape are torch's)."""
    size = tuple(int(s) for s in size)
    if len(tuple(stride)) != len(size):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(tuple(stride))} and "
                           f"{len(size)}")
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)

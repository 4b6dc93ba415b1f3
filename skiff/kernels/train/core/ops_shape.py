"""Shape, indexing and joining ops as autograd nodes.

None of these keep arrays for backward except ``Where``/``MaskedFill`` (the boolean mask),
integer-array indexing and ``Gather`` (the index); shapes are all they need.
"""

from __future__ import annotations

import numpy as np

from .autograd import Function, xp_of
from .ops_math import unbroadcast

__all__ = [
    "Reshape",
    "Transpose",
    "Expand",
    "GetItem",
    "Cat",
    "Stack",
    "Split",
    "Where",
    "MaskedFill",
    "Gather",
    "scatter_add",
]


class Reshape(Function):
    def forward(self, a, shape=None):
        self.shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError as e:
            from .shape_error import ShapeError

            want = [int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,))]
            raise ShapeError(f"shape '{want}' is invalid for input of size {a.size}") from e

    def backward(self, g):
        return g.reshape(self.shape)


class Transpose(Function):
    def forward(self, a, axes=None):
        self.axes = axes
        return a.transpose(axes)

    def backward(self, g):
        if self.axes is None:
            return g.transpose()
        return g.transpose(tuple(int(a) for a in np.argsort(self.axes)))


class Expand(Function):
    def forward(self, a, shape=None):
        self.shape = a.shape
        lead = len(shape) - a.ndim
        if lead < 0:
            from .shape_error import ShapeError

            raise ShapeError(f"expand: the number of sizes provided ({len(shape)}) must be "
                             f"greater or equal to the number of dimensions in the tensor "
                             f"({a.ndim})")
        for i, (s, t) in enumerate(zip(a.shape, shape[lead:])):
            if s != t and s != 1:  # torch's RuntimeError and words (numpy: ValueError)
                from .shape_error import ShapeError

                raise ShapeError(
                    f"The expanded size of the tensor ({t}) must match the existing size ({s}) "
                    f"at non-singleton dimension {i + lead}.  Target sizes: {list(shape)}.  "
                    f"Tensor sizes: {list(a.shape)}")
        return xp_of(a).broadcast_to(a, shape)

    def backward(self, g):
        return unbroadcast(g, self.shape)


def _is_advanced(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(hasattr(i, "shape") and i.ndim > 0 or isinstance(i, list) for i in items)


def _one_axis(index, ndim):
    """``(axis, idx)`` when ``index`` is full slices and one 1-D integer array (an
    ``index_select``, a gather of rows or of interpolation taps), else None."""
    items = index if isinstance(index, tuple) else (index,)
    if len(items) > ndim or any(i is None or i is Ellipsis for i in items):
        return None
    arrays = [k for k, i in enumerate(items) if not isinstance(i, slice)]
    if len(arrays) != 1 or any(i != slice(None) for k, i in enumerate(items) if k != arrays[0]):
        return None
    idx = items[arrays[0]]
    if not isinstance(idx, np.ndarray) or idx.ndim != 1 or idx.dtype.kind not in "iu":
        return None
    return arrays[0], idx


def _segment_add(target, axis, idx, values):
    """``np.add.at`` along one axis by a sort and segment sums (``add.reduceat``): np.add.at
    is unbuffered, one element at a time (a bilinear upsampling's backward spent 5% of a
    UNet step there)."""
    n = target.shape[axis]
    idx = np.where(idx < 0, idx + n, idx)
    vals = np.moveaxis(values, axis, 0)
    if idx.size > 1 and not (idx[1:] >= idx[:-1]).all():
        order = np.argsort(idx, kind="stable")
        idx, vals = idx[order], vals[order]
    starts = np.flatnonzero(np.concatenate(([True], idx[1:] != idx[:-1])))
    sums = np.add.reduceat(vals, starts, axis=0)
    np.moveaxis(target, axis, 0)[idx[starts]] += sums
    return target


def scatter_add(target, index, values):
    """``target[index] += values`` with repeated indices accumulated (numpy and cupy)."""
    xp = xp_of(target)
    if xp is np and values.ndim == target.ndim:
        one = _one_axis(index, target.ndim)
        if one is not None and one[1].size:
            return _segment_add(target, one[0], one[1], values)
    if xp is np or hasattr(xp.add, "at"):  # cupy >= 13 has ufunc.at (cupyx.scatter_add warns)
        xp.add.at(target, index, values)
    else:  # pragma: no cover - an older cupy
        import cupyx

        cupyx.scatter_add(target, index, values)
    return target


class GetItem(Function):
    """Basic slicing and integer/boolean array indexing."""

    def forward(self, a, index=None):
        self.shape, self.dtype = a.shape, a.dtype
        self.index = index
        self.advanced = _is_advanced(index)
        return a[index]

    def backward(self, g):
        xp = xp_of(g)
        out = xp.zeros(self.shape, dtype=g.dtype)
        if self.advanced:
            scatter_add(out, self.index, g)
        else:
            out[self.index] = g
        return out


class Cat(Function):
    def forward(self, *arrays, axis=0):
        xp = xp_of(arrays[0])
        self.axis = axis
        self.sizes = [a.shape[axis] for a in arrays]
        try:
            return xp.concatenate(arrays, axis=axis)
        except ValueError as e:
            from .shape_error import ShapeError

            raise ShapeError(str(e)) from e

    def backward(self, g):
        xp = xp_of(g)
        cuts = np.cumsum(self.sizes)[:-1].tolist()
        parts = xp.split(g, cuts, axis=self.axis)
        return tuple(p if need else None for p, need in zip(parts, self.needs_input_grad))


class Stack(Function):
    def forward(self, *arrays, axis=0):
        self.axis = axis
        return xp_of(arrays[0]).stack(arrays, axis=axis)

    def backward(self, g):
        xp = xp_of(g)
        n = g.shape[self.axis]
        return tuple(xp.take(g, i, axis=self.axis) for i in range(n))


class Split(Function):
    """Split into pieces of the given sizes along ``axis`` (several outputs)."""

    def forward(self, a, sizes=None, axis=0):
        xp = xp_of(a)
        self.axis = axis
        cuts = np.cumsum(sizes)[:-1].tolist()
        return tuple(xp.split(a, cuts, axis=axis))

    def backward(self, *grads):
        return xp_of(grads[0]).concatenate(grads, axis=self.axis)


class Where(Function):
    def forward(self, cond, a, b):
        xp = xp_of(cond)
        self.sa = a.shape if hasattr(a, "shape") else ()
        self.sb = b.shape if hasattr(b, "shape") else ()
        self.save_for_backward(cond)
        return xp.where(cond, a, b)

    def backward(self, g):
        (cond,) = self.saved
        xp = xp_of(g)
        _, na, nb = self.needs_input_grad
        zero = xp.zeros((), dtype=g.dtype)
        ga = unbroadcast(xp.where(cond, g, zero), self.sa) if na else None
        gb = unbroadcast(xp.where(cond, zero, g), self.sb) if nb else None
        return None, ga, gb


class MaskedFill(Function):
    def forward(self, a, mask, value=0.0):
        xp = xp_of(a)
        self.sa = a.shape
        self.save_for_backward(mask)
        out = xp.where(mask, xp.asarray(value, dtype=a.dtype), a)
        # torch's masked_fill is row-major whatever the layouts (round 45 h17); a meta array
        # (strides 0) stays one
        return out if out.flags.c_contiguous or 0 in out.strides else xp.ascontiguousarray(out)

    def backward(self, g):
        (mask,) = self.saved
        xp = xp_of(g)
        return unbroadcast(xp.where(mask, xp.zeros((), dtype=g.dtype), g), self.sa), None


class Gather(Function):
    """torch's ``gather``: ``out[i][j][k] = a[i][index[i][j][k]][k]`` along ``axis``; the
    backward adds each gradient back at its index (repeats accumulate). Keeps the index."""

    def forward(self, a, index=None, axis=0):
        self.shape, self.axis, self.index = a.shape, axis, index
        return xp_of(a).take_along_axis(a, index, axis=axis)

    def backward(self, g):
        xp = xp_of(g)
        full = list(xp.ogrid[tuple(slice(n) for n in self.index.shape)])
        full[self.axis] = self.index
        return scatter_add(xp.zeros(self.shape, dtype=g.dtype), tuple(full), g)

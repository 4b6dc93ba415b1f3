"""Round 29's torch names found missing by the name probe: ``torch.histogram``,
``torch.gradient`` (differentiable: each output is a fixed linear combination of shifted
slices, numpy's and torch's stencils for uniform and given coordinates, ``edge_order`` 1 or
2), ``torch.vander``, ``torch.as_strided`` (a gather over the tensor's row-major elements:
differentiable, overlapping windows add their gradients; a copy, not a view, and the strides
count in the tensor's own row-major order, which is torch's for a contiguous tensor),
``torch.polar``, and the Tensor methods ``as_strided``, ``apply_``/``map_`` (a Python
callable per element, in place, no gradient, as torch's),
``register_post_accumulate_grad_hook`` (skiff's grad-ready hook: ``fn(tensor)`` once
``.grad`` holds the pass's gradient) and ``cfloat``/``cdouble``."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

__all__ = ["histogram", "gradient", "vander", "as_strided", "polar", "install"]

_BASE: dict = {}
_Histogram = namedtuple("histogram", ["hist", "bin_edges"])


def _T():  # filled by install(): this file must not import tensor.py (it imports us)
    return _BASE["Tensor"], _BASE["module"].tensor


def _const(like, arr):
    Tensor, _ = _T()
    return Tensor._make(like.xp.asarray(arr, dtype=like.dtype), False, None, 0)


def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """torch's ``histogram``: ``(hist, bin_edges)`` of a float tensor (no gradient)."""
    Tensor, _ = _T()
    x = np.asarray(input._data).reshape(-1)
    if x.dtype.kind != "f":
        raise TypeError(f"histogram: input must be floating point (got {x.dtype}), as torch's; "
                        "call .double() first")
    b = np.asarray(bins._data) if isinstance(bins, Tensor) else int(bins)
    w = None if weight is None else np.asarray(getattr(weight, "_data", weight)).reshape(-1)
    if range is None and not isinstance(b, np.ndarray) and x.size:
        range = (float(x.min()), float(x.max()))
    h, e = np.histogram(x, bins=b, range=range, weights=w, density=density)
    return _Histogram(_const(input, h), _const(input, e))


def _taps_uniform(h, n, edge_order):
    """Per-position stencil (weights on offsets -2..2) for uniform spacing ``h``."""
    return _taps_coords(np.arange(n, dtype=np.float64) * h, edge_order)


def _taps_coords(x, edge_order):
    n = x.shape[0]
    w = np.zeros((n, 5))  # weight of f[i + k - 2]
    hs, hd = x[1:-1] - x[:-2], x[2:] - x[1:-1]
    w[1:-1, 1] = -hd / (hs * (hd + hs))
    w[1:-1, 2] = (hd - hs) / (hd * hs)
    w[1:-1, 3] = hs / (hd * (hd + hs))
    if edge_order == 1:
        w[0, 2], w[0, 3] = -1 / (x[1] - x[0]), 1 / (x[1] - x[0])
        w[-1, 1], w[-1, 2] = -1 / (x[-1] - x[-2]), 1 / (x[-1] - x[-2])
    else:
        d1, d2 = x[1] - x[0], x[2] - x[1]
        w[0, 2] = -(2 * d1 + d2) / (d1 * (d1 + d2))
        w[0, 3] = (d1 + d2) / (d1 * d2)
        w[0, 4] = -d1 / (d2 * (d1 + d2))
        d1, d2 = x[-2] - x[-3], x[-1] - x[-2]
        w[-1, 0] = d2 / (d1 * (d1 + d2))
        w[-1, 1] = -(d2 + d1) / (d1 * d2)
        w[-1, 2] = (2 * d2 + d1) / (d2 * (d1 + d2))
    return w


def gradient(input, *, spacing=1, dim=None, edge_order=1):  # noqa: A002
    """torch's ``gradient``: central differences inside, one-sided at the edges; a tuple
    with one tensor per differentiated dim."""
    Tensor, _ = _T()
    x = input
    dims = list(range(x.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % x.ndim for d in dims]
    if edge_order not in (1, 2):
        raise ValueError("gradient: edge_order must be 1 or 2")
    sp = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(sp) != len(dims):
        raise ValueError(f"gradient: {len(sp)} spacings for {len(dims)} dims")
    if x.dtype.kind != "f":
        x = x.double() if x.dtype.kind in "iub" else x
    out = []
    for d, s in zip(dims, sp):
        n = int(x.shape[d])
        if n < edge_order + 1:
            raise RuntimeError(f"gradient: dim {d} has {n} points; edge_order {edge_order} "
                               f"needs at least {edge_order + 1}")
        if isinstance(s, Tensor):
            w = _taps_coords(np.asarray(s._data, dtype=np.float64), edge_order)
        else:
            w = _taps_uniform(float(s), n, edge_order)
        total = None
        for k in range(5):
            if not w[:, k].any():
                continue
            off = k - 2
            lo, hi = max(0, -off), min(n, n - off)  # positions i with i + off inside
            src = [slice(None)] * x.ndim
            src[d] = slice(lo + off, hi + off)
            part = x[tuple(src)]
            shape = [1] * x.ndim
            shape[d] = hi - lo
            term = part * _const(x, w[lo:hi, k].reshape(shape))
            if lo or n - hi:  # zeros where the tap falls outside
                parts = []
                for width in (lo, None, n - hi):
                    if width is None:
                        parts.append(term)
                    elif width:
                        zshape = list(term.shape)
                        zshape[d] = width
                        parts.append(_const(x, np.zeros(zshape)))
                term = _BASE["module"].cat(parts, dim=d)
            total = term if total is None else total + term
        out.append(total)
    return tuple(out)


def vander(x, N=None, increasing=False):  # noqa: N803 - torch's name
    """torch's ``vander``: columns ``x ** (N-1) ... x ** 0`` (reversed with ``increasing``)."""
    stack = _BASE["module"].stack
    n = int(x.shape[0]) if N is None else int(N)
    powers = list(range(n)) if increasing else list(range(n - 1, -1, -1))
    cols = [x ** p if p else x * 0 + 1 for p in powers]
    return stack(cols, dim=-1) if cols else x.reshape(-1, 0)


def as_strided(input, size, stride, storage_offset=0):  # noqa: A002
    """torch's ``as_strided`` over the tensor's row-major elements (a differentiable copy)."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise ValueError(f"as_strided: size {size} and stride {stride} differ in length")
    idx = np.full(size, int(storage_offset or 0), dtype=np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        idx = idx + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    total = int(np.prod(input.shape))
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        raise RuntimeError(f"as_strided: size {size}, stride {stride} and offset "
                           f"{storage_offset} reach element {int(idx.max())} of a tensor of "
                           f"{total}")
    return input.reshape(-1)[input.xp.asarray(idx)]


def polar(abs, angle):  # noqa: A002 - torch's names
    """torch's ``polar``: ``abs * (cos(angle) + i sin(angle))``, differentiable."""
    from .complex_r28 import complex as _complex

    return _complex(abs * angle.cos(), abs * angle.sin())


def _apply(self, fn):
    Tensor, _ = _T()
    a = np.asarray(self._data)
    vals = np.vectorize(fn, otypes=[a.dtype])(a) if a.size else a.copy()
    return Tensor._make(self.xp.asarray(vals), False, None, 0)


def _map(self, other, fn):
    Tensor, _ = _T()
    a = np.asarray(self._data)
    b = np.broadcast_to(np.asarray(getattr(other, "_data", other)), a.shape)
    vals = np.vectorize(fn, otypes=[a.dtype])(a, b) if a.size else a.copy()
    return Tensor._make(self.xp.asarray(vals), False, None, 0)


def _no_grad_in_place(name, fn):
    def method(self, *args):
        from .autograd import is_grad_enabled

        if self.requires_grad and is_grad_enabled():
            raise RuntimeError(f"{name}_: a tensor that requires grad cannot be changed by a "
                               f"Python callable (no gradient); call it under no_grad() or on "
                               f"x.detach()")
        return self.copy_(fn(self, *args))
    method.__name__ = name + "_"
    return method


def install(tensor_class, module) -> None:
    """Add the methods to ``tensor_class``; ``module`` is tensor.py (``stack``, ``cat``)."""
    _BASE.update(Tensor=tensor_class, module=module)
    methods = {
        "as_strided": as_strided, "apply_": _no_grad_in_place("apply", _apply),
        "map_": _no_grad_in_place("map", _map),
        "register_post_accumulate_grad_hook": tensor_class.register_grad_ready_hook,
        "cfloat": lambda self: self.to(np.complex64),
        "cdouble": lambda self: self.to(np.complex128),
    }
    for name, fn in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)

"""More of torch's ``Tensor`` methods on skiff's :class:`~.tensor.Tensor`, so a model written
the torch way runs as it is: ``clamp``, ``softmax``, ``chunk``, ``repeat``, ``std``, ``sin``,
``index_select``, ``view``-like helpers, in-place fills of parameters under ``no_grad``...

Each is built from the differentiable ops of :mod:`.ops_math` / :mod:`.ops_shape` (``sin``
and ``cos`` are nodes there, beside ``exp`` and ``tanh``) or, where torch's gradient is zero
(``floor``, ``round``, ``sign``), returns a tensor that does not require grad. Attached to
``Tensor`` when :mod:`.tensor` is imported; tests/kernels/train/core/test_torch_style.py
compares every one with torch, value and gradient.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from . import default_dtype as _dd
from . import ops_linalg as LA
from . import ops_math as M
from . import ops_shape as S
from . import ops_stats as ST
from .autograd import Function, note_write, xp_of

# tensor.py's class and functions, given by tensor.py when it installs these methods (this
# module imports nothing of it: no circle between the two files)
_BASE: dict = {}


def where(cond, a, b):
    return _BASE["where"](cond, a, b)


def _is_tensor(x) -> bool:
    return isinstance(x, _BASE["Tensor"])

__all__ = ["install"]


def _axis(kw, axis, default=None):
    """torch's ``dim=`` as skiff's ``axis``."""
    if "dim" in kw:
        return kw.pop("dim")
    if "axis" in kw:  # numpy's keyword (np.cumsum(t, axis=1) passes it so)
        return kw.pop("axis")
    return default if axis is None else axis


def clamp(self, min=None, max=None):  # noqa: A002 - torch's names
    if min is None and max is None:
        raise ValueError("clamp needs min or max")
    if getattr(self, "_batched", False):  # inside a batched vmap call: tensors for masks
        out = self
        if min is not None:
            out = where(self < min, min, out)
        if max is not None:
            out = where(out > max, max, out)
        return out
    if _is_tensor(min) or _is_tensor(max):
        return _clamp_tensors(self, min, max)
    lo, hi = min, max
    out = self
    if lo is not None:
        out = where(self._data < lo, lo, out)
    if hi is not None:  # torch's min(max(x, lo), hi): all ``hi`` where lo > hi
        out = where(out._data > hi, hi, out)
    return out


def _clamp_tensors(x, lo, hi):
    """``clamp`` with tensor bounds, differentiable in them as torch's: ``x`` takes the
    gradient where ``lo <= x <= hi``, ``lo`` where ``x < lo < hi``, ``hi`` where ``x > hi``
    or ``hi < lo`` (then the result is ``hi`` everywhere); ``x < lo == hi`` gives ``lo`` and
    no gradient, as torch's ``clamp_backward_min_max``."""
    a = x._data
    la = None if lo is None else (lo._data if _is_tensor(lo) else lo)
    ha = None if hi is None else (hi._data if _is_tensor(hi) else hi)
    out = x
    if la is not None:
        below = a < la
        if ha is not None:
            flat = below & (la >= ha)  # lo == hi below it: lo's value, no gradient
            out = where(flat, lo.detach() if _is_tensor(lo) else lo, out)
            below = below & (la < ha)
        out = where(below, lo, out)
    if ha is not None:
        above = a > ha if la is None else (a > ha) | (ha < la)
        out = where(above, hi, out)
    return out


def softmax(self, axis=None, **kw):
    from .nn import functional as F

    return F.softmax(self, axis=_axis(kw, axis, -1))


def log_softmax(self, axis=None, **kw):
    from .nn import functional as F

    return F.log_softmax(self, axis=_axis(kw, axis, -1))


def chunk(self, chunks: int, axis=None, **kw):
    axis = _axis(kw, axis, 0)
    size = math.ceil(self.shape[axis] / int(chunks))
    return self.split(size, axis=axis)


def repeat(self, *sizes):
    """torch's ``repeat`` (numpy's ``tile``): the tensor copied ``sizes[i]`` times along axis i."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    if len(sizes) < self.ndim:
        raise ValueError(f"repeat needs at least {self.ndim} sizes, got {sizes}")
    x = self.reshape(*((1,) * (len(sizes) - self.ndim) + tuple(self.shape)))
    inter = []
    for d in x.shape:
        inter += [1, d]
    x = x.reshape(*inter)
    grown = []
    for r, d in zip(sizes, x.shape[1::2]):
        grown += [r, d]
    return x.expand(*grown).reshape(*(r * d for r, d in zip(sizes, x.shape[1::2])))


# ---- max, min, var, std: torch's meanings, numpy's keywords beside them ---------------------
_ValuesIndices = namedtuple("values_indices", ["values", "indices"])


def _dims(dim, axis):
    """numpy's ``axis`` as given, or torch's ``dim``, where ``()``/``[]`` means every axis."""
    if axis is not None:
        return tuple(axis) if isinstance(axis, list) else axis
    if isinstance(dim, (tuple, list)):
        return tuple(dim) or None
    return dim


def _extreme(self, dim, keepdim, axis, keepdims, node, arg, pairwise):
    if _is_tensor(dim) or isinstance(dim, np.ndarray):  # x.max(other): elementwise
        return pairwise(self, dim)
    keep = bool(keepdim if keepdims is None else keepdims)
    if axis is not None or dim is None or isinstance(dim, (tuple, list)):
        return node.apply(self, axis=_dims(dim, axis), keepdims=keep)  # the values alone
    if getattr(self, "_batched", False):  # inside a batched vmap call (vmap_r30)
        from .vmap_tensor_r30 import indices_along

        return _ValuesIndices(*indices_along(self, dim, keep, node, arg))
    idx = arg(self._data, axis=dim)
    keep_idx = xp_of(idx).expand_dims(idx, dim)
    values = S.Gather.apply(self, index=keep_idx, axis=dim)  # the gradient at that index
    if not keep:
        values = values.squeeze(dim)
    return _ValuesIndices(values, _BASE["Tensor"]._make(keep_idx if keep else idx, False,
                                                          None, 0))


def max(self, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """torch's: ``x.max()`` the largest value, ``x.max(dim, keepdim=False)`` the pair
    ``(values, indices)``, ``x.max(other)`` the elementwise maximum; numpy's ``axis=`` (an
    int or a tuple) and ``keepdims=`` give the values alone."""
    return _extreme(self, dim, keepdim, axis, keepdims, M.Max, self.xp.argmax,
                    maximum)


def min(self, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """torch's ``min`` (see :func:`max`)."""
    return _extreme(self, dim, keepdim, axis, keepdims, M.Min, self.xp.argmin,
                    minimum)


def _ddof(unbiased, correction, ddof) -> int:
    if sum(v is not None for v in (unbiased, correction, ddof)) > 1:
        raise ValueError("give one of unbiased=, correction= and ddof=")
    if ddof is not None:
        return int(ddof)
    if correction is not None:
        return int(correction)
    return 0 if unbiased is False else 1


def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
        keepdims=None, ddof=None):
    """torch's variance: divided by ``n - 1`` unless ``unbiased=False`` or ``correction=0``
    (numpy's ``ddof=`` as well); ``dim``/``axis`` an int, a tuple or None (all)."""
    keep = bool(keepdim if keepdims is None else keepdims)
    dims, k = _dims(dim, axis), _ddof(unbiased, correction, ddof)
    _no_freedom(self, dims, k, "var")
    return M.Var.apply(self, axis=dims, keepdims=keep, ddof=k)


def _no_freedom(self, dims, ddof, name, stacklevel=4):
    """torch's UserWarning where ``n - correction <= 0`` (the result is nan or inf)."""
    shape = tuple(self.shape)
    axes = M._norm_axis(dims, len(shape))  # torch's errors for a dim out of range or repeated
    n = 1
    for a in axes:
        n *= shape[a]
    if n - ddof <= 0:
        import warnings

        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=stacklevel)


def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
        keepdims=None, ddof=None):
    """torch's standard deviation: the square root of :func:`var` (``n - 1`` by default);
    a constant slice has gradient 0, as torch's (sqrt's inf made it nan)."""
    from .ops_linalg import _root

    keep = bool(keepdim if keepdims is None else keepdims)
    dims, k = _dims(dim, axis), _ddof(unbiased, correction, ddof)
    _no_freedom(self, dims, k, "std")
    return _root(M.Var.apply(self, axis=dims, keepdims=keep, ddof=k), 2.0)


def maximum(self, other):
    """The elementwise maximum; where the two are equal each gets half the gradient (torch)."""
    return _pairwise(self, other, lambda a, b: a > b)


def minimum(self, other):
    return _pairwise(self, other, lambda a, b: a < b)


def _pairwise(self, other, wins):
    if getattr(self, "_batched", False) or getattr(other, "_batched", False):  # vmap_r30
        return where(self == other, (self + other) * 0.5, where(wins(self, other), self, other))
    o = other._data if _is_tensor(other) else other
    a = self._data
    # a nan on either side gives nan (torch's; fmax/fmin skip it): self's nan wins here,
    # other's where self does not win
    first = where(wins(a, o) | xp_of(a).isnan(a) if a.dtype.kind in "fc" else wins(a, o),
                  self, other)
    tie = self._data == o
    if first.dtype.kind not in "fc":  # integers: no gradient to share (and no 0.5 to float)
        return first
    if xp_of(self._data) is np and not tie.any():  # a host read on a GPU: always mask there
        return first
    return where(tie, (self + other) * 0.5, first)


# ---- indexing, sorting, scans ------------------------------------------------------------------
def _const(self, arr):
    return type(self)._make(arr, False, None, 0)


def _raw(index):
    """An index's array: a tensor's, a device array as it is (np.asarray would read a cupy
    array back to the host, which cupy refuses), else numpy's."""
    if _is_tensor(index):
        return index._data
    device = type(index).__module__.split(".")[0] == "cupy"
    return index if device or isinstance(index, np.ndarray) else np.asarray(index)


def _any_batched(*xs):
    return any(getattr(x, "_batched", False) for x in xs)


def gather(self, dim, index):
    """torch's ``gather``: ``out[i][j] = x[i][index[i][j]]`` along ``dim`` (dim 1 here)."""
    if _any_batched(self, index):  # inside a batched vmap call (vmap_r30)
        from .vmap_rules_r30 import gather as batched

        return batched(self, dim, index, S.Gather)
    idx = xp_of(self._data).asarray(_raw(index))
    if idx.dtype.kind not in "iu":
        raise TypeError(f"gather needs an integer index, got dtype {idx.dtype}")
    from .shape_error import check_index, wrap_dim

    dim = wrap_dim(dim, self.ndim)
    check_index(idx, self.shape[dim] if self.ndim else 1, dim)
    return S.Gather.apply(self, index=idx, axis=dim)


def _argsort(self, dim, descending):
    xp = xp_of(self._data)
    a = self._data
    if descending and xp is np and a.dtype.kind == "f" and a.ndim and np.isnan(a).any():
        nan = np.isnan(a)  # torch's: nan above every number (first here), in their order
        return np.lexsort((np.where(nan, 0, -a), ~nan), axis=dim)
    if descending:  # stable: equal values keep their order, as torch's stable sort
        a = -(a.astype(np.int64) if a.dtype.kind in "bu" else a)
    return xp.argsort(a, axis=dim, kind="stable")


def sort(self, dim=-1, descending=False, stable=False):
    """torch's ``sort``: ``(values, indices)`` (stable always); the gradient follows."""
    if _any_batched(self):
        from .vmap_rules_r30 import sort as batched

        return _ValuesIndices(*batched(self, dim, descending, None, S.Gather))
    idx = _argsort(self, dim, descending)
    return _ValuesIndices(S.Gather.apply(self, index=idx, axis=dim), _const(self, idx))


def argsort(self, dim=-1, descending=False, stable=False):
    if _any_batched(self):
        return sort(self, dim, descending)[1]
    return _const(self, _argsort(self, dim, descending))


def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's names
    """The ``k`` largest (or smallest) along ``dim``: ``(values, indices)``, in order."""
    if _any_batched(self):
        from .vmap_rules_r30 import sort as batched

        return _ValuesIndices(*batched(self, dim, largest, k, S.Gather))
    idx = _argsort(self, dim, largest)
    idx = idx[(slice(None),) * (dim % self.ndim) + (slice(0, int(k)),)]
    return _ValuesIndices(S.Gather.apply(self, index=idx, axis=dim), _const(self, idx))


def cumsum(self, dim=None, **kw):
    return M.Cumsum.apply(self, axis=_axis(kw, dim))


def prod(self, dim=None, keepdim=False, **kw):
    dim = _axis(kw, dim)
    keepdim = kw.pop("keepdims", keepdim)
    if dim is None:
        return M.Prod.apply(self.reshape(-1), axis=0, keepdims=False)
    return M.Prod.apply(self, axis=dim, keepdims=bool(keepdim))


def flip(self, *dims, **kw):
    if "dims" in kw or "dim" in kw:  # torch's flip(x, dims=(0,))
        dims = (kw.pop("dims", kw.pop("dim", None)),)
    if kw:
        raise TypeError(f"flip() got an unexpected keyword argument {next(iter(kw))!r}")
    dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    index = [slice(None)] * self.ndim
    for d in dims:
        index[d] = slice(None, None, -1)
    return self[tuple(index)]


def _triangle(upper):
    def method(self, diagonal=0):
        xp = self.xp
        n, m = self.shape[-2:]
        keep = (xp.triu if upper else xp.tril)(xp.ones((n, m), dtype=bool), k=diagonal)
        return where(keep, self, xp.zeros((), dtype=self.dtype))

    return method


def norm(self, p="fro", dim=None, keepdim=False):
    """torch's vector norm (``p`` 2/"fro", 1, inf, 0, -inf or any number) over ``dim`` (all:
    None); a zero gradient where the norm is 0, as torch's (a plain root gives nan there)."""
    from .ops_linalg import _root

    a = self.abs()
    dim = _dims(dim, None)
    if p in ("fro", 2):
        return _root((self * self).sum(dim, keepdim), 2.0)
    if p == 1:
        return a.sum(dim, keepdim)
    if p in (math.inf, "inf"):
        return a.amax(dim, keepdim)
    from .ops_linalg import vector_norm  # 0 (a count), p < 1, -inf (the least |x|), ...

    return vector_norm(self, float(p), dim=dim, keepdim=keepdim)


def amax(self, dim=None, keepdim=False):
    """torch's ``amax``: the values alone over an int or a tuple of dims (ties share)."""
    return M.Max.apply(self, axis=_dims(dim, None), keepdims=bool(keepdim))


def amin(self, dim=None, keepdim=False):
    return M.Min.apply(self, axis=_dims(dim, None), keepdims=bool(keepdim))


def _logical(fn):
    def method(self, dim=None, keepdim=False, *, axis=None, keepdims=None, out=None):
        if out is not None:  # numpy's np.all(t) passes out=None; an array out is numpy's own
            raise TypeError(f"{fn}: out= is not supported on tensors")
        dim = axis if dim is None else dim
        keepdim = keepdim if keepdims is None else bool(keepdims)
        return _const(self, getattr(xp_of(self._data), fn)(self._data.astype(bool), axis=dim,
                                                           keepdims=keepdim))

    return method


class _Clone(Function):
    def forward(self, a):
        return a.copy()

    def backward(self, g):
        return g


def index_select(self, axis=None, index=None, **kw):
    axis = _axis(kw, axis)
    nd = self.ndim or 1  # (this module's max is the Tensor method)
    if not -nd <= int(axis) < nd:
        raise IndexError(f"index_select: dim {axis} is out of range for a {self.ndim}-D tensor")
    from .shape_error import check_index

    idx = _raw(index)
    check_index(idx, self.shape[int(axis) % nd] if self.ndim else 1, int(axis) % nd)
    return self[(slice(None),) * (int(axis) % nd) + (idx,)]  # dim=-1: the last axis


def _no_grad_value(fn):
    def method(self):
        if getattr(self, "_batched", False):  # inside a batched vmap call: on the batch
            return self._on_phys(lambda p: p._make(fn(xp_of(p._data), p._data), False, None, 0))
        return type(self)._make(fn(xp_of(self._data), self._data), False, None, 0)

    return method


def _round(self, decimals=0):
    """Half to even (torch's), ``decimals`` as torch's: ``round(x * 10**d) / 10**d``."""
    if not decimals:
        return _no_grad_value(lambda xp, a: xp.round(a))(self)
    f = 10.0 ** decimals
    with np.errstate(all="ignore"):  # torch divides by 10**-d for negative d, as numpy
        return _no_grad_value(lambda xp, a: (xp.round(a * f) / f if decimals > 0 else
                                             xp.round(a / 10.0 ** -decimals) * 10.0 **
                                             -decimals).astype(a.dtype, copy=False))(self)


def _in_place(op):
    def method(self, value=None):
        if self.requires_grad and _BASE["is_grad_enabled"]():
            raise RuntimeError(f"{op}_ changes a tensor autograd records in place: do it under "
                               "no_grad() (as torch asks for parameters) or on .data")
        v = value._data if _is_tensor(value) else value
        if op == "zero":
            self._data[...] = 0
        elif op == "fill":
            self._data[...] = v
        elif op == "add":
            self._data += v
        elif op == "sub":
            self._data -= v
        elif op == "mul":
            self._data *= v
        note_write(self)
        return self

    return method


def _float(t):
    return t.astype(_dd.FLOAT) if t.dtype.kind in ("i", "u", "b") else t


def install(tensor_class, where_fn, grad_enabled) -> None:
    """Attach the methods to ``tensor_class`` (:class:`~.tensor.Tensor`; idempotent);
    ``where_fn`` and ``grad_enabled`` are tensor.py's ``where`` and ``is_grad_enabled``."""
    _BASE.update(Tensor=tensor_class, where=where_fn, is_grad_enabled=grad_enabled)
    methods = {
        "clamp": clamp, "clip": clamp, "softmax": softmax, "log_softmax": log_softmax,
        "chunk": chunk, "repeat": repeat, "std": std, "var": var, "max": max, "min": min,
        "maximum": maximum, "minimum": minimum,
        "index_select": index_select, "gather": gather, "sort": sort, "argsort": argsort,
        "topk": topk, "cumsum": cumsum, "prod": prod, "flip": flip, "norm": norm,
        "amax": amax, "amin": amin, "tril": _triangle(False), "triu": _triangle(True),
        "any": _logical("any"), "all": _logical("all"),
        "clone": lambda self: _Clone.apply(self),
        "square": lambda self: (self.astype(np.int64) if self.dtype.kind == "b" else self) ** 2,
        "rsqrt": lambda self: 1.0 / self.sqrt(),
        "sin": lambda self: M.Sin.apply(_float(self)),
        "cos": lambda self: M.Cos.apply(_float(self)),
        "isfinite": _no_grad_value(lambda xp, a: xp.isfinite(a)),
        "isnan": _no_grad_value(lambda xp, a: xp.isnan(a)),
        "isinf": _no_grad_value(lambda xp, a: xp.isinf(a)),
        "floor": _no_grad_value(lambda xp, a: xp.floor(a)),
        "round": _round,
        "sign": _no_grad_value(lambda xp, a: xp.sign(a)),
        "contiguous": lambda self: self,
        "dim": lambda self: self.ndim,
        "numel": lambda self: int(self.size),
        "t": lambda self: self.transpose((1, 0)) if self.ndim == 2 else self,
        "long": lambda self: self.astype(np.int64),
        "int": lambda self: self.astype(np.int32),
        "bool": lambda self: self.astype(np.bool_),
        "cpu": lambda self: self.to("cpu"),
        "cuda": lambda self, index=0: self.to(f"cuda:{index}"),
        "type_as": lambda self, other: self.astype(other.dtype),
        "new_zeros": lambda self, *shape, **kw: self.new_full(
            shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape, 0,
            **kw),  # self's dtype (a float64 tensor's under a float32 default was float32),
        # self's device (meta too)
        "zero_": _in_place("zero"), "fill_": _in_place("fill"), "add_": _in_place("add"),
        "sub_": _in_place("sub"), "mul_": _in_place("mul"),
        # order statistics and counting (ops_stats.py, round 26)
        "median": ST.median, "kthvalue": ST.kthvalue, "quantile": ST.quantile,
        "nanquantile": ST.nanquantile, "unique": ST.unique, "bincount": ST.bincount,
        "index_put": ST.index_put, "index_put_": ST.index_put_,
        "det": LA.det, "inverse": LA.inverse, "logdet": LA.logdet, "slogdet": LA.slogdet,
        "diagonal": LA._tensor_diagonal,
    }
    for name, fn in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)

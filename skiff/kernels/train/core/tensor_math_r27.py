"""More of torch's functions and methods, found missing by porting (round 27): the special
functions ``lgamma``, ``digamma``, ``erfinv`` (nodes on scipy's), ``logit``, ``xlogy``, ``sinc``,
``logaddexp``, ``sgn``, ``signbit``, ``heaviside``; the logical ops; ``dot``, ``mv``, ``kron``,
``diff``, ``take_along_dim``, ``cummax``/``cummin``, ``logcumsumexp``, ``rot90``,
``fliplr``/``flipud``, ``aminmax``, ``tensor_split``, ``unfold`` (sliding windows), ``isin``,
``nansum``/``nanmean``, ``triu_``/``tril_``/``clip_``, ``byte``/``char``/``short``; and the
functions ``hstack``, ``vstack``, ``dstack``, ``column_stack``, ``atleast_1d/2d/3d``,
``broadcast_to``/``broadcast_tensors``/``broadcast_shapes``, ``searchsorted``/``bucketize``,
``std_mean``/``var_mean``, ``tril_indices``/``triu_indices``, ``block_diag``,
``cartesian_prod``, ``cov``/``corrcoef``, ``cosine_similarity``.

Gradients come from the differentiable ops they are built of (gathers by precomputed indices
for ``cummax``, ``unfold`` and ``take_along_dim``), as torch's, including its zeros where a
plain formula gives nan (``xlogy`` at x = 0, ``sinc`` at 0). Installed on ``Tensor`` by
:mod:`.tensor`; tests/kernels/train/core/test_porter_r27_math.py compares each with torch in
float64.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Sequence

import numpy as np

from . import default_dtype as _dd
from .autograd import Function, xp_of
from .shape_error import ShapeError, broadcast_error
from .torch_size import Size

_BASE: dict = {}  # Tensor, where, in_place, tensor module: set by install()
_MinMax = namedtuple("aminmax", ["min", "max"])
_ValIdx = namedtuple("cummax", ["values", "indices"])


def _special(name):
    """scipy's (cupyx's on a GPU) special function ``name``."""
    def fn(x):
        if xp_of(x) is np:
            import scipy.special as sp
        else:  # pragma: no cover - GPU
            import cupyx.scipy.special as sp
        return getattr(sp, name)
    return fn


class _SpecialFn(Function):
    """``f(a)`` with gradient ``g * df(a)``: lgamma (digamma), digamma (trigamma), erfinv."""

    def forward(self, a, kind="gammaln"):
        self.kind = kind
        out = _special(kind)(a)(a).astype(a.dtype, copy=False)
        self.save_for_backward(a if kind != "erfinv" else out)
        return out

    def backward(self, g):
        (s,) = self.saved
        xp = xp_of(s)
        if self.kind == "gammaln":
            d = _special("psi")(s)(s)
        elif self.kind == "psi":
            d = _special("polygamma")(s)(1, s)
        else:  # erfinv: d/dx = sqrt(pi)/2 exp(erfinv(x)^2)
            d = (math.sqrt(math.pi) / 2) * xp.exp(s * s)
        return g * d.astype(g.dtype, copy=False)


def _float(t):
    return t.astype(_dd.FLOAT) if t.dtype.kind in "iub" else t


def _t(x, like=None):
    T = _BASE["Tensor"]
    if isinstance(x, T):
        return x
    return T(x, dtype=like.dtype if like is not None and np.ndim(x) == 0 else None)


def _const(t, array):
    return _BASE["Tensor"]._make(t.xp.asarray(array), False, None, 0)


class _Polygamma(Function):
    """``polygamma(n, x)``, gradient ``polygamma(n + 1, x)``."""

    def forward(self, a, n=0):
        self.n = n
        self.save_for_backward(a)
        return _special("polygamma")(a)(n, a).astype(a.dtype, copy=False)

    def backward(self, g):
        (a,) = self.saved
        return g * _special("polygamma")(a)(self.n + 1, a).astype(g.dtype, copy=False)


def polygamma(n, input):  # noqa: A002
    """torch's argument order: ``polygamma(n, x)``."""
    return input.polygamma(n)


def histc(self, bins=100, min=0, max=0):  # noqa: A002
    """torch's ``histc``: counts in ``bins`` equal bins over [min, max] (the data's range when
    both are 0), as the input's dtype; no gradient."""
    a = self._data.astype(np.float64).reshape(-1)  # on its device (cupy.histogram on a GPU)
    lo, hi = float(min), float(max)
    if lo == hi == 0:  # the data's range: two reads, as torch's
        lo, hi = (float(a.min()), float(a.max())) if a.size else (0.0, 0.0)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = self.xp.histogram(a, bins=int(bins), range=(lo, hi))  # outside: left out
    return _const(self, counts.astype(self.dtype))


def renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` rescaled to norm ``maxnorm`` where its ``p``-norm exceeds it
    (torch's factor ``maxnorm / (norm + 1e-7)``)."""
    from .shape_error import wrap_dim

    dim = wrap_dim(dim, self.ndim)
    axes = tuple(k for k in range(self.ndim) if k != dim)
    norms = self.norm(p=p, dim=axes, keepdim=True)
    factor = _BASE["where"](norms._data > maxnorm, maxnorm / (norms + 1e-7),
                            self.xp.ones((), dtype=self.dtype))
    return self * factor


# ---- elementwise ------------------------------------------------------------------------------
def lgamma(self):
    return _SpecialFn.apply(_float(self), kind="gammaln")


def digamma(self):
    return _SpecialFn.apply(_float(self), kind="psi")


def erfinv(self):
    return _SpecialFn.apply(_float(self), kind="erfinv")


def logit(self, eps=None):
    x = _float(self)
    if eps is not None:
        x = x.clamp(eps, 1 - eps)
    out = x.log() - (-x).log1p()
    if eps is None:  # torch's gradient is nan outside [0, 1] (1/x - 1/(x-1) is finite there)
        bad = (x._data < 0) | (x._data > 1)
        if x.xp is not np or bool(bad.any()):
            nan = x.xp.where(bad, x.xp.nan, 0.0).astype(x.dtype)
            out = out + x * nan  # nan there already; 0 elsewhere (and in the gradient)
    return out


def xlogy(self, other):
    """``x * log(y)``, 0 where x is 0; torch's gradients: ``log(y)`` for x (0 where x is 0
    and y <= 0) and ``x / y`` for y."""
    x, y = _float(self), _float(_t(other, self))
    if x.dtype != y.dtype:  # round 44 (h12): promoted before the log, as torch's (float32 y
        # with float64 x: the log was taken in float32, 2e-9 off in Gamma's log_prob)
        if (x.ndim == 0) != (y.ndim == 0):  # a zero-dim one takes the other's dtype
            dt = y.dtype if x.ndim == 0 else x.dtype
        else:
            dt = np.result_type(x.dtype, y.dtype)
        x, y = x.astype(dt), y.astype(dt)
    bad = (x._data == 0) & (y._data <= 0)
    if x.xp is np and not bool(bad.any()):  # a host read on a GPU: always mask there
        return x * y.log()
    where = _BASE["where"]
    safe = where(bad, y.xp.ones((), dtype=y.dtype), y)
    return where(bad, x.xp.zeros((), dtype=x.dtype), x * safe.log())


def sinc(self):
    """``sin(pi x) / (pi x)``, 1 at 0 (gradient 0 there)."""
    x = _float(self)
    where = _BASE["where"]
    zero = x._data == 0
    safe = where(zero, x.xp.ones((), dtype=x.dtype), x) * math.pi
    return where(zero, x.xp.ones((), dtype=x.dtype), safe.sin() / safe)


def logaddexp(self, other):
    a, b = _float(self), _t(other, self)
    m = a.detach().maximum(b.detach())
    m = _BASE["where"](xp_of(m._data).isfinite(m._data), m, m.xp.zeros((), dtype=m.dtype))
    return ((a - m).exp() + (b - m).exp()).log() + m


def signbit(self):
    return _const(self, self.xp.signbit(self._data))


def heaviside(self, values):
    v = values._data if isinstance(values, _BASE["Tensor"]) else values
    return _const(self, self.xp.heaviside(self._data, v))


def isin(self, test_elements, *, invert=False):
    t = test_elements._data if isinstance(test_elements, _BASE["Tensor"]) else test_elements
    return _const(self, self.xp.isin(self._data, self.xp.asarray(t), invert=invert))


def _logical(fn):
    def method(self, other=None):
        xp = self.xp
        a = self._data.astype(bool)
        if fn == "logical_not":
            return _const(self, xp.logical_not(a))
        b = other._data if isinstance(other, _BASE["Tensor"]) else xp.asarray(other)
        return _const(self, getattr(xp, fn)(a, b.astype(bool)))

    method.__name__ = fn
    return method


# ---- reductions and scans ---------------------------------------------------------------------
def nansum(self, dim=None, keepdim=False):
    nan = self.xp.isnan(self._data)
    return _BASE["where"](nan, self.xp.zeros((), dtype=self.dtype), self).sum(dim=dim,
                                                                           keepdim=keepdim)


def nanmean(self, dim=None, keepdim=False):
    count = (~self.xp.isnan(self._data)).sum(axis=dim, keepdims=keepdim).astype(self.dtype)
    return nansum(self, dim, keepdim) / _const(self, count)


def aminmax(self, *, dim=None, keepdim=False):
    return _MinMax(self.amin(dim, keepdim), self.amax(dim, keepdim))


def _cum_extreme(better):
    def method(self, dim):
        xp = self.xp
        v = xp.moveaxis(self._data, dim, -1)
        n = v.shape[-1]
        i = xp.broadcast_to(xp.arange(n, dtype=np.int64), v.shape)
        shift = 1
        while shift < n:  # a log-step scan of (value, index) pairs: log2(n) rounds of a few
            # kernels (one per position before; a GPU paid n launches). The later element
            # wins ties (torch keeps the latest index) and a nan wins over any number.
            lv, li, rv, ri = v[..., :-shift], i[..., :-shift], v[..., shift:], i[..., shift:]
            take = xp.isnan(rv) | (~xp.isnan(lv) & (better(rv, lv) | (rv == lv)))
            v = xp.concatenate([v[..., :shift], xp.where(take, rv, lv)], axis=-1)
            i = xp.concatenate([i[..., :shift], xp.where(take, ri, li)], axis=-1)
            shift *= 2
        idx = xp.ascontiguousarray(xp.moveaxis(i, -1, dim))
        return _ValIdx(self.gather(dim, idx), _const(self, idx))

    return method


def logcumsumexp(self, dim):
    """``log(cumsum(exp(x)))`` along ``dim``: shifted by the maximum along ``dim``, or, where
    an early running maximum lies 600 below it (its terms would vanish), by a scan of
    ``logaddexp``."""
    x = _float(self)
    xp, a = x.xp, x._data
    ref = a.max(axis=dim, keepdims=True)
    # the running maximum is smallest at the first element: one read of one flag (was a copy
    # of the whole array to the host)
    first = x.narrow(dim, 0, 1)._data
    if bool(xp.isfinite(ref).all() & (first - ref > -600).all()):
        shift = _const(x, ref)
        return (x - shift).exp().cumsum(dim).log() + shift
    return _pairwise_lcse(x, dim)


def _pairwise_lcse(x, dim):
    """The exact scan, element by element (wide ranges: exp of the shift would underflow)."""
    parts = x.unbind(dim)
    out, acc = [], parts[0]
    out.append(acc)
    for p in parts[1:]:
        acc = logaddexp(acc, p)
        out.append(acc)
    return _BASE["tensor_mod"].stack(out, dim)


# ---- shapes -----------------------------------------------------------------------------------
def dot(self, other):
    if self.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {other.ndim}D "
                           "tensors (use matmul or mm for matrices)")
    from .shape_error import check_dot_dtypes
    check_dot_dtypes(self, other)
    return (self * other).sum()


def mv(self, vec):
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: a matrix and a vector, got {self.ndim}D and {vec.ndim}D")
    from . import autocast_ops as _ac
    with _ac.off():  # not on torch's CPU autocast lists: runs at its operands' precision
        return self @ vec


def kron(self, other):
    a, b = self, _t(other, self)
    nd = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (nd - b.ndim) + tuple(b.shape))
    ai = [s for d in a.shape for s in (d, 1)]
    bi = [s for d in b.shape for s in (1, d)]
    out = a.reshape(ai) * b.reshape(bi)
    return out.reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def diff(self, n=1, dim=-1, prepend=None, append=None):
    tm = _BASE["tensor_mod"]
    x = self
    if prepend is not None or append is not None:
        parts = [p if isinstance(p, _BASE["Tensor"]) else _t(p, self)
                 for p in (prepend, x, append) if p is not None]
        x = tm.cat(parts, dim)
    for _ in range(int(n)):
        m = x.shape[dim]
        x = x.narrow(dim, 1, m - 1) - x.narrow(dim, 0, m - 1) if x.dtype.kind != "b" else \
            _const(x, x.narrow(dim, 1, m - 1)._data ^ x.narrow(dim, 0, m - 1)._data)
    return x


def take_along_dim(self, indices, dim=None):
    idx = indices._data if isinstance(indices, _BASE["Tensor"]) else self.xp.asarray(indices)
    if dim is None:
        return self.reshape(-1).gather(0, idx.reshape(-1))
    dim = dim % self.ndim
    shape = list(np.broadcast_shapes(tuple(s for k, s in enumerate(self.shape) if k != dim),
                                     tuple(s for k, s in enumerate(idx.shape) if k != dim)))
    xs, ids = list(shape), list(shape)
    xs.insert(dim, self.shape[dim])
    ids.insert(dim, idx.shape[dim])
    src = self if tuple(self.shape) == tuple(xs) else self.expand(*xs)
    return src.gather(dim, self.xp.broadcast_to(idx, ids))


def rot90(self, k=1, dims=(0, 1)):
    d0, d1 = dims
    k %= 4
    if k == 0:
        return self
    if k == 2:
        return self.flip((d0, d1))
    if k == 1:
        return self.flip(d1).transpose(d0, d1)
    return self.transpose(d0, d1).flip(d1)


def tensor_split(self, indices_or_sections, dim=0):
    n = self.shape[dim]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0, *sizes])
    else:
        bounds = [0, *[min(max(int(i), 0), n) for i in indices_or_sections], n]
    return tuple(self.narrow(dim, int(a), max(int(b) - int(a), 0))
                 for a, b in zip(bounds[:-1], bounds[1:]))


def unfold(self, dimension, size, step):
    """torch's ``Tensor.unfold``: windows of ``size`` every ``step`` along ``dimension``, as a
    new last axis."""
    n = self.shape[dimension]
    if size > n:
        raise RuntimeError(f"unfold: size {size} is larger than dimension {dimension}'s {n}")
    starts = np.arange(0, n - size + 1, step)
    idx = (starts[:, None] + np.arange(size)[None, :]).reshape(-1)
    out = self.index_select(dimension, self.xp.asarray(idx))
    d = dimension % self.ndim
    shape = list(self.shape)
    shape[d:d + 1] = [len(starts), size]
    return out.reshape(shape).movedim(d + 1, -1)


def argwhere(self):
    return self.nonzero()


def float_power(self, exponent):
    """``self ** exponent`` in float64 (torch's)."""
    e = exponent.astype(np.float64) if isinstance(exponent, _BASE["Tensor"]) else exponent
    return self.astype(np.float64) ** e


def dist(self, other, p=2):
    return (self - other).norm(p=p)


def _split_even(self, sections, dim, name):
    if isinstance(sections, (int, np.integer)) and self.shape[dim] % int(sections):
        raise RuntimeError(f"{name} attempted to split along dimension {dim}, but the size of "
                           f"the dimension {self.shape[dim]} is not divisible by the "
                           f"split_size {sections}!")
    return tensor_split(self, sections, dim)


def hsplit(self, sections):
    return _split_even(self, sections, 1 if self.ndim > 1 else 0, "hsplit")


def vsplit(self, sections):
    return _split_even(self, sections, 0, "vsplit")


# ---- functions (not methods) ------------------------------------------------------------------
def pdist(input, p=2):  # noqa: A002
    """The distances between the rows of ``input`` (N, M), upper triangle, row by row."""
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    xp = input.xp
    d = input.index_select(0, xp.asarray(i)) - input.index_select(0, xp.asarray(j))
    if float(p) == float("inf"):  # round 45 (h7): ties each get the whole gradient, torch's
        from .ops_linalg import _InfDist
        return _InfDist.apply(d)
    return d.norm(p=p, dim=1)


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The ``r``-element combinations of a 1-D tensor's entries, one per row."""
    import itertools

    n = input.shape[0]
    pick = (itertools.combinations_with_replacement if with_replacement
            else itertools.combinations)(range(n), r)
    idx = np.array(list(pick), dtype=np.int64).reshape(-1, r)
    if idx.size == 0:
        return input[:0].reshape(0, r) if r else input[:0]
    return input.index_select(0, input.xp.asarray(idx.reshape(-1))).reshape(-1, r)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule along ``dim`` (spacing ``dx``, default 1, or the points ``x``)."""
    n = y.shape[dim]
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    if x is None:
        return ((left + right) * (0.5 * (1.0 if dx is None else dx))).sum(dim)
    xs = x if isinstance(x, _BASE["Tensor"]) else _t(x, y)
    dxs = xs.diff(dim=-1 if xs.ndim == 1 else dim)
    if xs.ndim == 1 and y.ndim > 1:
        shape = [1] * y.ndim
        shape[dim % y.ndim] = n - 1
        dxs = dxs.reshape(shape)
    return ((left + right) * dxs * 0.5).sum(dim)



def _tensors(ts):
    return [t if isinstance(t, _BASE["Tensor"]) else _t(t) for t in ts]


def atleast_1d(*ts):
    out = [t.reshape(1) if t.ndim == 0 else t for t in _tensors(_flat_args(ts))]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*ts):
    out = [t.reshape((1,) * (2 - t.ndim) + tuple(t.shape)) if t.ndim < 2 else t
           for t in _tensors(_flat_args(ts))]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*ts):
    out = []
    for t in _tensors(_flat_args(ts)):
        if t.ndim == 0:
            t = t.reshape(1, 1, 1)
        elif t.ndim == 1:
            t = t.reshape(1, -1, 1)
        elif t.ndim == 2:
            t = t.unsqueeze(-1)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def _flat_args(ts):
    return list(ts[0]) if len(ts) == 1 and isinstance(ts[0], (list, tuple)) else list(ts)


def hstack(tensors):
    ts = [atleast_1d(t) for t in tensors]
    return _BASE["tensor_mod"].cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    return _BASE["tensor_mod"].cat([atleast_2d(t) for t in tensors], 0)


def dstack(tensors):
    return _BASE["tensor_mod"].cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors):
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _tensors(tensors)]
    return _BASE["tensor_mod"].cat(ts, 1)


def broadcast_shapes(*shapes):
    """torch's ``broadcast_shapes``: a ``torch.Size`` (round 45 h17: was a plain tuple), torch's
    errors (a RuntimeError naming the mismatching argument, a ValueError for a negative length
    broadcast; ``None`` skipped)."""
    shapes = [(s,) if isinstance(s, int) else s for s in shapes if s is not None]
    for s in shapes:
        if not isinstance(s, Sequence):
            raise RuntimeError("Input shapes should be of type ints, a tuple of ints, or a list "
                               f"of ints, got {s}")
    if not shapes:
        return Size()
    common = [1] * max(len(s) for s in shapes)
    for k, s in enumerate(shapes):
        for i in range(-1, -1 - len(s), -1):
            d = s[i]
            if d == common[i]:
                continue
            if common[i] == 1:
                if d < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = d
            if d != 1 and common[i] != d:
                raise ShapeError(  # (a RuntimeError, torch's; a ValueError, numpy's)
                    f"Attempting to broadcast a dimension of length {d} at {i}! Mismatching "
                    f"argument at index {k} had {s}; but expected shape should be broadcastable "
                    f"to {common}")
    return Size(common)


def broadcast_to(input, shape):  # noqa: A002
    return input.expand(*shape)


def broadcast_tensors(*tensors):
    ts = _tensors(_flat_args(tensors))
    shape = ts[0].shape if ts else ()
    for t in ts[1:]:  # torch's pairwise fold, its message (round 45 h17)
        try:
            shape = np.broadcast_shapes(shape, t.shape)
        except ValueError:
            raise broadcast_error(shape, t.shape) from None
    return tuple(t if tuple(t.shape) == shape else t.expand(*shape) for t in ts)


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Insertion points of ``values`` in each row of ``sorted_sequence`` (no gradient), on
    the tensors' device (cupy's ``searchsorted`` on a GPU: no copy to the host)."""
    T = _BASE["Tensor"]
    xp = next((t.xp for t in (sorted_sequence, values, sorter) if isinstance(t, T)), np)

    def raw(a):
        return a._data if isinstance(a, T) else xp.asarray(a)

    seq, v = raw(sorted_sequence), raw(values)
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = xp.take_along_axis(seq, raw(sorter), -1)
    if seq.ndim == 1:
        out = xp.searchsorted(seq, v, side=side)
    else:
        rows_s, rows_v = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
        out = xp.stack([xp.searchsorted(rows_s[i], rows_v[i], side=side)
                        for i in range(rows_s.shape[0])])
        out = out.reshape(v.shape)
    dt = np.int32 if out_int32 else np.int64
    return T._make(xp.asarray(out).astype(dt), False, None, 0)


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _correction(unbiased, correction):
    if unbiased is not None and correction is not None:
        raise RuntimeError("std_mean/var_mean: unbiased and correction both given")
    return correction if correction is not None else (1 if unbiased in (None, True) else 0)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    if isinstance(dim, bool):  # torch's std_mean(x, False): the old unbiased position
        dim, unbiased = None, dim
    return (input.std(dim, keepdim=keepdim, correction=_correction(unbiased, correction)),
            input.mean(dim, keepdim=keepdim))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return (input.var(dim, keepdim=keepdim, correction=_correction(unbiased, correction)),
            input.mean(dim, keepdim=keepdim))


def _indices(row, col, offset, upper):
    rr, cc = np.triu_indices(row, offset, col) if upper else np.tril_indices(row, offset, col)
    T = _BASE["Tensor"]
    return T(np.stack([rr, cc]).astype(np.int64), dtype=np.int64)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    return _indices(row, col, offset, False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    return _indices(row, col, offset, True)


def block_diag(*tensors):
    tm = _BASE["tensor_mod"]
    ts = [t.reshape(1, -1) if t.ndim < 2 else t for t in _tensors(tensors)]
    dt = np.result_type(*[t.dtype for t in ts])
    ts = [t.astype(dt) for t in ts]
    total = sum(t.shape[1] for t in ts)
    rows, left = [], 0
    for t in ts:
        r, c = t.shape
        parts = [tm.zeros(r, left, dtype=dt, device=t.device), t,
                 tm.zeros(r, total - left - c, dtype=dt, device=t.device)]
        rows.append(tm.cat([p for p in parts if p.shape[1]] or [t], 1))
        left += c
    return tm.cat(rows, 0)


def cartesian_prod(*tensors):
    ts = _tensors(tensors)
    if len(ts) == 1:
        return ts[0]
    from .functions_more import meshgrid

    grids = meshgrid(*ts, indexing="ij")
    return _BASE["tensor_mod"].stack([g.reshape(-1) for g in grids], 1)


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """Covariance of the rows (variables) over the columns (observations), torch's: with
    ``fweights`` (integer counts) and ``aweights`` (importance), the conjugate of a complex
    input's second factor, squeezed (one variable: a 0-d tensor). Round 44 (h12): the weights
    were refused, a complex covariance was not Hermitian, one variable gave (1, 1)."""
    x = _float(_t(input))
    if x.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                           f"an input with {x.ndim} dimensions")
    x = x.reshape(1, -1) if x.ndim < 2 else x
    n = x.shape[1]
    w = aw = None
    for name, v in (("fweights", fweights), ("aweights", aweights)):
        if v is None:
            continue
        v = _t(v)
        if v.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but "
                               f"got {name} with {v.ndim} dimensions")
        if v.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {v.numel()} != {n}")
        if name == "fweights" and v.dtype.kind not in "iu":
            raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                               "fweights with Float dtype")
        if name == "aweights" and v.dtype.kind != "f":
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        if bool((v._data < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        if name == "fweights":  # counts: the input's (real) dtype; aweights promote
            v = v.astype(x.real.dtype if x.dtype.kind == "c" else x.dtype)
        if name == "aweights":
            aw = v
        w = v if w is None else w * v
    if w is None:
        xc = x - x.mean(1, keepdim=True)
        xh = xc.conj().transpose(0, 1) if x.dtype.kind == "c" else xc.transpose(0, 1)
        return ((xc @ xh) / max(n - correction, 0)).squeeze()
    wsum = w.sum()
    xc = x - (x * w).sum(1, keepdim=True) / wsum
    if correction == 0:
        norm = wsum
    elif aw is None:
        norm = wsum - correction
    else:
        norm = wsum - correction * (w * aw).sum() / wsum
    norm = norm.clamp(min=0)
    xh = xc.conj().transpose(0, 1) if x.dtype.kind == "c" else xc.transpose(0, 1)
    return ((xc * w) @ xh / norm).squeeze()


def corrcoef(input):  # noqa: A002
    c = cov(input)
    if c.ndim == 0:
        return c / c
    if c.dtype.kind == "c":  # torch's: the real and imaginary parts clipped apart
        d = c.diagonal().real.sqrt()
        r = c / d.unsqueeze(1) / d.unsqueeze(0)
        return r.real.clamp(-1, 1) + 1j * r.imag.clamp(-1, 1)
    d = c.diagonal().sqrt()
    return (c / d.unsqueeze(1) / d.unsqueeze(0)).clamp(-1, 1)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    from .nn import functional as F

    return F.cosine_similarity(x1, x2, dim=dim, eps=eps)


FUNCTIONS = ("atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack",
             "column_stack", "broadcast_shapes", "broadcast_to", "broadcast_tensors",
             "searchsorted", "bucketize", "std_mean", "var_mean", "tril_indices",
             "triu_indices", "block_diag", "cartesian_prod", "cov", "corrcoef",
             "cosine_similarity", "pdist", "combinations", "trapezoid", "polygamma")
# methods that are also top-level functions (skiff.xlogy(x, y) is x.xlogy(y))
METHODS = ("lgamma", "digamma", "erfinv", "logit", "xlogy", "sinc", "logaddexp", "sgn",
           "signbit", "heaviside", "isin", "logical_and", "logical_or", "logical_xor",
           "logical_not", "nansum", "nanmean", "aminmax", "cummax", "cummin", "logcumsumexp",
           "dot", "mv", "kron", "diff", "take_along_dim", "rot90", "fliplr", "flipud",
           "tensor_split", "argwhere", "float_power", "dist", "hsplit", "vsplit", "histc",
           "renorm")


def install(tensor_class, where, in_place, tensor_mod) -> None:
    """Attach the methods to ``tensor_class`` (idempotent)."""
    _BASE.update(Tensor=tensor_class, where=where, tensor_mod=tensor_mod)
    methods = {
        "lgamma": lgamma, "digamma": digamma, "erfinv": erfinv, "logit": logit,
        "xlogy": xlogy, "sinc": sinc, "logaddexp": logaddexp, "sgn": lambda s: s.sign(),
        "signbit": signbit, "heaviside": heaviside, "isin": isin,
        "logical_and": _logical("logical_and"), "logical_or": _logical("logical_or"),
        "logical_xor": _logical("logical_xor"), "logical_not": _logical("logical_not"),
        "nansum": nansum, "nanmean": nanmean, "aminmax": aminmax,
        "cummax": _cum_extreme(lambda a, b: a > b), "cummin": _cum_extreme(lambda a, b: a < b),
        "logcumsumexp": logcumsumexp, "dot": dot, "inner": None, "mv": mv, "kron": kron,
        "diff": diff, "take_along_dim": take_along_dim, "rot90": rot90,
        "fliplr": lambda s: s.flip(1), "flipud": lambda s: s.flip(0),
        "tensor_split": tensor_split, "unfold": unfold, "argwhere": argwhere,
        "float_power": float_power, "dist": dist, "hsplit": hsplit, "vsplit": vsplit,
        "polygamma": lambda s, n: _Polygamma.apply(_float(s), n=int(n)),
        "histc": histc, "renorm": renorm,
        "is_contiguous": lambda s, memory_format=None: bool(s._data.flags.c_contiguous),
        "stride": lambda s, dim=None: (tuple(st // s._data.itemsize for st in s._data.strides)
                                       if dim is None else
                                       s._data.strides[dim] // s._data.itemsize),
        "storage_offset": lambda s: 0,
        "pin_memory": lambda s, device=None: s, "share_memory_": lambda s: s,
        "is_pinned": lambda s, device=None: False,
        "triu_": in_place("triu", lambda s, diagonal=0: s.triu(diagonal)),
        "tril_": in_place("tril", lambda s, diagonal=0: s.tril(diagonal)),
        "clip_": in_place("clip", lambda s, min=None, max=None: s.clamp(min, max)),
        "byte": lambda s: s.astype(np.uint8), "char": lambda s: s.astype(np.int8),
        "short": lambda s: s.astype(np.int16),
        "equal": lambda s, o: tuple(s.shape) == tuple(o.shape) and bool(  # one flag read
            (s._data == (o._data if isinstance(o, tensor_class) else o)).all()),
        "isclose": lambda s, o, rtol=1e-05, atol=1e-08, equal_nan=False: _const(
            s, s.xp.isclose(s._data, o._data if isinstance(o, tensor_class) else o, rtol,
                            atol, equal_nan)),
        "allclose": lambda s, o, rtol=1e-05, atol=1e-08, equal_nan=False: bool(
            s.xp.allclose(s._data, o._data if isinstance(o, tensor_class) else o, rtol,
                          atol, equal_nan)),
    }
    for name, fn in methods.items():
        if fn is not None and not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)


__all__ = ["install", "FUNCTIONS", "METHODS", *FUNCTIONS]

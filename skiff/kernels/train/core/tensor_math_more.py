"""More of torch's elementwise and shape methods, found missing by porting (round 26):
``clamp_min``/``clamp_max``, ``lerp``, ``addcmul``/``addcdiv``, ``where``, ``trunc``/``ceil``
(no gradient, as ``floor``), ``frac``, ``erf``, ``asin``/``acos``/``atan``, ``sinh``/``cosh``,
``atan2``, ``hypot``, ``log2``/``log10``/``exp2``, ``sigmoid_``/``relu_``/``tanh_``, ``roll``,
``tile``, ``movedim``/``moveaxis``, ``unflatten``, ``repeat_interleave``, ``outer``,
``nan_to_num``, ``diag`` (of a matrix), ``trace``, ``count_nonzero``, ``is_floating_point``,
``half``/``bfloat16``, ``cumprod``, ``index_add``/``index_add_``.

Built from the differentiable ops (gathers by precomputed indices for ``roll`` and
``repeat_interleave``), or small nodes where torch's gradient needs one (``erf``, the inverse
trigonometric functions, ``atan2``). Installed on ``Tensor`` by :mod:`.tensor`;
tests/kernels/train/core/test_torch_gaps_r26.py compares each with torch in float64.
"""

from __future__ import annotations

import math

import numpy as np

from . import default_dtype as _dd
from .autograd import Function, xp_of
from .ops_math import _shape, unbroadcast

_BASE: dict = {}  # Tensor, where, in_place: set by install()


def _erf_xp(x):
    xp = xp_of(x)
    if xp is np:
        from scipy.special import erf

        return erf(x)
    import cupyx.scipy.special  # pragma: no cover - GPU

    return cupyx.scipy.special.erf(x)  # pragma: no cover - GPU


class _Unary(Function):
    """``f(a)`` with gradient ``g * df(a)`` (``kind`` picks the pair)."""

    FNS = {
        "erf": (_erf_xp, lambda xp, a: 2 / math.sqrt(math.pi) * xp.exp(-a * a)),
        "asin": (lambda a: xp_of(a).arcsin(a), lambda xp, a: 1 / xp.sqrt(1 - a * a)),
        "acos": (lambda a: xp_of(a).arccos(a), lambda xp, a: -1 / xp.sqrt(1 - a * a)),
        "atan": (lambda a: xp_of(a).arctan(a), lambda xp, a: 1 / (1 + a * a)),
        "sinh": (lambda a: xp_of(a).sinh(a), lambda xp, a: xp.cosh(a)),
        "cosh": (lambda a: xp_of(a).cosh(a), lambda xp, a: xp.sinh(a)),
        "asinh": (lambda a: xp_of(a).arcsinh(a), lambda xp, a: 1 / xp.sqrt(a * a + 1)),
        "acosh": (lambda a: xp_of(a).arccosh(a), lambda xp, a: 1 / xp.sqrt(a * a - 1)),
        "atanh": (lambda a: xp_of(a).arctanh(a), lambda xp, a: 1 / (1 - a * a)),
    }

    def forward(self, a, kind="erf"):
        self.kind = kind
        self.save_for_backward(a)
        return self.FNS[kind][0](a).astype(a.dtype, copy=False)

    def backward(self, g):
        (a,) = self.saved
        return g * self.FNS[self.kind][1](xp_of(a), a).astype(g.dtype, copy=False)


class _Atan2(Function):
    def forward(self, a, b):
        self.sa, self.sb = _shape(a), _shape(b)
        self.save_for_backward(a, b)
        return xp_of(a if hasattr(a, "shape") else b).arctan2(a, b)

    def backward(self, g):
        a, b = self.saved
        na, nb = self.needs_input_grad
        den = a * a + b * b
        with np.errstate(divide="ignore", invalid="ignore"):  # torch's: 0 at (0, 0), not nan
            d = xp_of(g).where(den == 0, 0, g / den)
        return (unbroadcast(d * b, self.sa) if na else None,
                unbroadcast(-d * a, self.sb) if nb else None)


class _Cumprod(Function):
    """Running product along ``axis``; the gradient is ``rev_cumsum(g * out) / x`` where no
    input on the axis is zero, else (those lanes) each input's product with itself left out."""

    def forward(self, a, axis=0):
        self.axis = axis
        out = xp_of(a).cumprod(a, axis=axis)
        self.save_for_backward(a, out)
        return out

    def backward(self, g):
        a, out = self.saved
        xp, ax = xp_of(a), self.axis
        rev = xp.flip(xp.cumsum(xp.flip(g * out, ax), axis=ax), ax)
        zero = (a == 0).any(axis=ax, keepdims=True)
        gx = xp.where(zero, 0, rev / xp.where(a == 0, 1, a))
        if bool(zero.any()):  # lanes with a zero: O(n^2) along the axis, exact
            n = a.shape[ax]
            am, gm = xp.moveaxis(a, ax, -1), xp.moveaxis(g, ax, -1)
            exact = xp.zeros_like(am)
            for i in range(n):
                left = am.copy()
                left[..., i] = 1
                prods = xp.cumprod(left, axis=-1)
                exact[..., i] = (gm[..., i:] * prods[..., i:]).sum(-1)
            gx = xp.where(zero, xp.moveaxis(exact, -1, ax), gx)
        return gx


class _IndexAdd(Function):
    """``out = a`` with ``alpha * src`` added at ``index`` along ``axis`` (repeats add up)."""

    def forward(self, a, src, axis=0, index=None, alpha=1):
        self.axis, self.index, self.alpha = axis, index, alpha
        out = a.copy()
        xp = xp_of(a)
        moved = xp.moveaxis(out, axis, 0)
        vals = xp.moveaxis(src, axis, 0) * alpha
        if xp is np:
            np.add.at(moved, index, vals)
        else:  # pragma: no cover - GPU
            import cupyx

            cupyx.scatter_add(moved, index, vals)
        return out

    def backward(self, g):
        na, ns = self.needs_input_grad
        gs = None
        if ns:
            gs = xp_of(g).take(g, self.index, axis=self.axis) * self.alpha
        return (g if na else None), gs


def cumprod(self, dim=None, *, dtype=None, **kw):
    axis = kw.get("axis", dim)
    x = self if dtype is None else self.astype(dtype)
    if x.dtype.kind in "bu":  # torch's int64 (numpy: bool as float here, uint as uint64)
        x = x.astype(np.int64)
    from .shape_error import wrap_dim

    return _Cumprod.apply(x, axis=wrap_dim(axis, x.ndim))


def index_add(self, dim, index, source, *, alpha=1):
    from .shape_error import check_index, wrap_dim

    idx = index._data if isinstance(index, _BASE["Tensor"]) else self.xp.asarray(index)
    dim = wrap_dim(dim, self.ndim)
    check_index(idx, self.shape[dim], dim)
    return _IndexAdd.apply(self, source, axis=dim, index=idx, alpha=alpha)


def _float(t):
    return t.astype(_dd.FLOAT) if t.dtype.kind in "iub" else t


def _unary(kind):
    def method(self):
        return _Unary.apply(_float(self), kind=kind)

    method.__name__ = kind
    return method


def _no_grad(fn):
    def method(self):
        return _BASE["Tensor"]._make(fn(self.xp, self._data), False, None, 0)

    return method


def atan2(self, other):
    return _Atan2.apply(_float(self), other)


def where_method(self, condition, other):
    return _BASE["where"](condition, self, other)


def _gather(self, axis, idx):
    return self.index_select(axis, self.xp.asarray(idx))


def roll(self, shifts, dims=None):
    if dims is None:
        return roll(self.reshape(-1), shifts, 0).reshape(*self.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(dims)} dims")
    out = self
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        out = _gather(out, d % out.ndim, (np.arange(n) - s) % n)
    return out


def _repeat_counts(repeats, n=None):
    """``repeats`` as a numpy integer vector, with torch's checks and words."""
    r = repeats._data if isinstance(repeats, _BASE["Tensor"]) else repeats
    r = np.asarray(r.get() if hasattr(r, "get") else r)
    if n is None and r.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if r.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if r.dtype.kind not in "iub":
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for '
                                  f"'{'Float' if r.dtype.kind == 'f' else r.dtype}'")
    if (r < 0).any():
        raise RuntimeError("repeats can not be negative")
    if n is not None and r.ndim == 1 and r.shape[0] not in (1, n):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {r.shape[0]} and input.size(0) = {n}")
    return r


def _check_output_size(idx, output_size):
    if output_size is not None and int(output_size) != len(idx):
        raise RuntimeError("allocated size does not match required size")


def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
    """torch's ``repeat_interleave``; with no ``repeats`` (``torch.repeat_interleave(counts)``)
    the indices ``0, 1, ...`` each repeated its count, as int64 (a graph's edge-to-node map)."""
    if repeats is None:
        r = _repeat_counts(self)
        idx = np.repeat(np.arange(r.shape[0], dtype=np.int64), r)
        _check_output_size(idx, output_size)
        return _BASE["Tensor"](self.xp.asarray(idx), dtype=np.int64)
    if dim is None:
        return repeat_interleave(self.reshape(-1), repeats, 0, output_size=output_size)
    r = _repeat_counts(repeats, self.shape[dim])
    idx = np.repeat(np.arange(self.shape[dim]), r)
    _check_output_size(idx, output_size)
    return _gather(self, dim % self.ndim, idx)


def tile(self, *dims):
    reps = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    reps = (1,) * (self.ndim - len(reps)) + tuple(reps)
    x = self.reshape(*((1,) * (len(reps) - self.ndim)), *self.shape)
    return x.repeat(*reps)


def movedim(self, source, destination):
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    from .shape_error import wrap_dim

    src = [wrap_dim(s, self.ndim) for s in src]
    dst = [wrap_dim(d, self.ndim) for d in dst]
    order = [i for i in range(self.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return self.permute(*order)


def unflatten(self, dim, sizes):
    from .shape_error import wrap_dim

    dim = wrap_dim(dim, self.ndim)
    sizes = tuple(sizes)
    return self.reshape(*self.shape[:dim], *sizes, *self.shape[dim + 1:])


def outer(self, other):
    return self.reshape(-1, 1) * other.reshape(1, -1)


def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced (by default 0 and the dtype's largest/smallest finite
    values); the gradient flows where the input was finite, as torch's."""
    info = np.finfo(np.float32 if self.dtype.name == "bfloat16" else self.dtype) \
        if self.dtype.kind == "f" or self.dtype.name == "bfloat16" else None
    if info is None:
        return self
    d = self._data
    xp = self.xp
    big = float(info.max) if posinf is None else posinf
    small = float(info.min) if neginf is None else neginf
    fill = xp.where(xp.isnan(d), nan, xp.where(d > 0, big, small)).astype(d.dtype)
    return _BASE["where"](xp.isfinite(d), self, _BASE["Tensor"]._make(fill, False, None, 0))


def diag(self, diagonal=0):
    """torch's ``diag``: a matrix's diagonal ``diagonal``, or for a vector the square matrix
    holding it on that diagonal (differentiable both ways)."""
    if self.ndim == 1:
        return _diag_matrix(self, int(diagonal))
    if self.ndim != 2:
        raise ValueError(f"diag: the input must be a vector or a matrix (got {self.ndim}-D; "
                         "for batches use diagonal() or diag_embed())")
    n, m = self.shape
    k = diagonal
    i = np.arange(max(0, -k), min(n, m - k))
    return self[self.xp.asarray(i), self.xp.asarray(i + k)]


def _diag_matrix(v, k):
    Tensor = _BASE["Tensor"]
    m = int(v.shape[0])
    n = m + abs(k)
    if k:  # padded to n by a matmul (stays in the graph)
        v = Tensor._make(v.xp.asarray(np.eye(n, m), dtype=v.dtype), False, None, 0) @ v
    place = Tensor._make(v.xp.asarray(np.eye(n, k=k), dtype=v.dtype), False, None, 0)
    return place * (v.unsqueeze(1) if k >= 0 else v.unsqueeze(0))


def trace(self):
    return diag(self).sum()


def count_nonzero(self, dim=None):
    d = self._data != 0
    return _BASE["Tensor"]._make(d.sum(axis=dim).astype(np.int64), False, None, 0)


def is_floating_point(self) -> bool:
    return self.dtype.kind == "f" or self.dtype.name == "bfloat16"


def install(tensor_class, where, in_place) -> None:
    """Attach the methods to ``tensor_class`` (idempotent); ``in_place`` is tensor_torch's
    ``_in_place`` (``x.relu_()`` as ``x = x.relu()`` in the graph)."""
    _BASE.update(Tensor=tensor_class, where=where)
    ln2, ln10 = math.log(2.0), math.log(10.0)
    methods = {
        "clamp_min": lambda self, m: self.clamp(min=m),
        "clamp_max": lambda self, m: self.clamp(max=m),
        "lerp": lambda self, end, weight: self + (end - self) * weight,
        "addcmul": lambda self, t1, t2, *, value=1: self + t1 * t2 * value,
        "addcdiv": lambda self, t1, t2, *, value=1: self + t1 / t2 * value,
        "where": where_method,
        "trunc": _no_grad(lambda xp, a: xp.trunc(a)),
        "fix": _no_grad(lambda xp, a: xp.trunc(a)),
        "ceil": _no_grad(lambda xp, a: xp.ceil(a)),
        "frac": lambda self: self - self.trunc(),
        "erf": _unary("erf"), "asin": _unary("asin"), "acos": _unary("acos"),
        "atan": _unary("atan"), "sinh": _unary("sinh"), "cosh": _unary("cosh"),
        "arcsin": _unary("asin"), "arccos": _unary("acos"), "arctan": _unary("atan"),
        "asinh": _unary("asinh"), "acosh": _unary("acosh"), "atanh": _unary("atanh"),
        "arcsinh": _unary("asinh"), "arccosh": _unary("acosh"), "arctanh": _unary("atanh"),
        "atan2": atan2, "arctan2": atan2,
        "hypot": lambda self, other: (self * self + other * other).sqrt(),
        "log2": lambda self: _float(self).log() * (1 / ln2),
        "log10": lambda self: _float(self).log() * (1 / ln10),
        "exp2": lambda self: (_float(self) * ln2).exp(),
        "sigmoid_": in_place("sigmoid", lambda s: s.sigmoid()),
        "relu_": in_place("relu", lambda s: s.relu()),
        "tanh_": in_place("tanh", lambda s: s.tanh()),
        "roll": roll, "tile": tile, "movedim": movedim, "moveaxis": movedim,
        "unflatten": unflatten, "repeat_interleave": repeat_interleave, "outer": outer,
        "ger": outer, "nan_to_num": nan_to_num, "diag": diag, "trace": trace,
        "count_nonzero": count_nonzero, "is_floating_point": is_floating_point,
        "cumprod": cumprod, "index_add": index_add,
        "index_add_": in_place("index_add", index_add),
        "half": lambda self: self.astype(np.float16),
        "bfloat16": lambda self: self.astype("bfloat16"),
    }
    for name, fn in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)


__all__ = ["install"]

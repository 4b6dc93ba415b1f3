"""torch's order statistics and counting on skiff tensors: ``median``, ``kthvalue``,
``quantile``, ``unique``, ``bincount``, ``index_put``/``index_put_`` and
``get_default_dtype``/``set_default_dtype`` (public as ``skiff.median``, ``x.median(...)``...).

The order statistics pick elements by a stable ``argsort`` and take them with the ``Gather``
node, so the gradient goes to the element picked, as torch's does (``median`` is the lower of
the two middle values, as torch's; ``quantile`` interpolates between two picks).
``unique`` and ``bincount`` have no gradient (torch's neither). ``index_put`` is one node:
its backward zeroes the overwritten places (``accumulate=False``) and gives ``values`` the
gradient at its places. tests/kernels/train/core/test_torch_gaps2_r26.py compares with torch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import default_dtype as _default_dtype
from . import ops_shape as S
from .autograd import Function, is_grad_enabled, xp_of
from .ops_math import unbroadcast
from .tensor_r29 import FUNCTION_FORMS as _FORMS_NAMES
from .tensor_r29b import TOP_LEVEL as _R29B_NAMES

__all__ = ["median", "kthvalue", "quantile", "nanquantile", "unique", "bincount", "index_put",
           "index_put_", "get_default_dtype", "set_default_dtype",
           # round 29 (tensor_r29.py, func_r29.py): skiff/__init__.py finds skiff.<name> here
           "histogram", "gradient", "vander", "as_strided", "polar", "vmap", "func", "compile",
           "jit", "backends", *_FORMS_NAMES,
           # round 29, second pass (tensor_r29b.py): cross, mode, nanmedian, svd, ...
           *_R29B_NAMES,
           # round 32: torch.scalar_tensor, mvlgamma, i0, swapdims (defined below); in
           # skiff.api.FALLBACK_NAMES too (tests/test_dir_names_r29.py holds the lists equal)
           "scalar_tensor", "mvlgamma", "i0", "swapdims"]

_ValuesIndices = namedtuple("values_indices", ["values", "indices"])


def _T():
    from .tensor import Tensor, tensor
    return Tensor, tensor


def _tensor(x):
    Tensor, tensor = _T()
    return x if isinstance(x, Tensor) else tensor(x)


def _const(arr):
    return _T()[0]._make(arr, False, None, 0)


def _pick(x, pos, dim, keepdim, order=None):
    """The element of sorted rank ``pos`` (an int or an int array of the reduced shape) along
    ``dim``: ``(values, indices)`` (``order``: the stable argsort along ``dim``, when known)."""
    xp = xp_of(x._data)
    if order is None:
        order = xp.argsort(x._data, axis=dim, kind="stable")
    if np.isscalar(pos):
        sel = xp.take(order, [int(pos)], axis=dim)
    else:
        sel = xp.take_along_axis(order, pos, axis=dim)
    vals = S.Gather.apply(x, index=sel, axis=dim)
    if not keepdim:
        vals, sel = vals.squeeze(dim), xp.squeeze(sel, axis=dim)
    return vals, _const(sel.astype(np.int64))


def _dim(x, dim):
    if x.ndim == 0:
        return 0
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"dim {dim} is out of range for a tensor of {x.ndim} dims")
    return dim % x.ndim


def _middle(x, d):
    """The sorted rank of the median along ``d``: the lower middle one, or the first nan
    where the slice has one (nan sorts last; torch's median is then nan)."""
    n = x.shape[d]
    if x.dtype.kind != "f":
        return (n - 1) // 2
    xp = xp_of(x._data)
    nans = xp.isnan(x._data).sum(axis=d, keepdims=True)
    if not bool(nans.any()):
        return (n - 1) // 2
    return xp.where(nans > 0, n - nans, (n - 1) // 2).astype(np.int64)


def median(x, dim=None, keepdim=False):
    """torch's ``median``: the lower middle value (nan where the slice has a nan); with
    ``dim``: ``(values, indices)``."""
    x = _tensor(x)
    if dim is None:
        flat = x.reshape(-1)
        if flat.shape[0] == 0:
            raise ValueError("median of an empty tensor (torch returns nan; check the input)")
        v = _pick(flat, _middle(flat, 0), 0, False)[0].reshape(())
        if not flat.requires_grad or v.xp.isnan(v._data):
            return v
        # torch's: the gradient shared evenly by every entry equal to the median (a tie)
        ties = flat.xp.asarray(flat._data == v._data, dtype=flat.dtype)
        return v.detach() + ((flat - v.detach()) * ties).sum() / float(ties.sum())
    x1 = x.reshape(1) if x.ndim == 0 else x
    d = _dim(x1, dim)
    v, i = _pick(x1, _middle(x1, d), d, keepdim or x.ndim == 0)
    if x.ndim == 0:
        v, i = v.reshape(()), i.reshape(())
    return _ValuesIndices(v, i)


def kthvalue(x, k, dim=-1, keepdim=False):
    """torch's ``kthvalue``: the ``k``-th smallest (``k`` from 1) along ``dim``."""
    x = _tensor(x)
    d = _dim(x, dim)
    n = x.shape[d] if x.ndim else 1
    if not 1 <= int(k) <= n:
        raise ValueError(f"kthvalue: k must be in [1, {n}] (the size of dim {dim}), got {k}")
    x1 = x.reshape(1) if x.ndim == 0 else x
    v, i = _pick(x1, int(k) - 1, d, keepdim)
    return _ValuesIndices(v, i)


_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, dim, keepdim, interpolation, ignore_nan):
    x = _tensor(x)
    if x.dtype.kind != "f":
        raise TypeError(f"quantile needs a float tensor, got dtype {x.dtype} (use .double())")
    if interpolation not in _INTERP:
        raise ValueError(f"quantile: interpolation must be one of {_INTERP}, got "
                         f"{interpolation!r}")
    Tensor, _ = _T()
    qa = np.asarray(q._data if isinstance(q, Tensor) else q, dtype=np.float64)
    if qa.ndim > 1:
        raise ValueError(f"quantile: q must be a number or 1-D, got shape {qa.shape}")
    if np.any((qa < 0) | (qa > 1)):
        raise ValueError(f"quantile: q must be in [0, 1], got {qa.tolist()}")
    src = x.reshape(-1) if dim is None else (x.reshape(1) if x.ndim == 0 else x)
    d = 0 if dim is None else _dim(src, dim)
    xp = xp_of(src._data)
    a = src._data
    nan = xp.isnan(a)
    red = tuple(1 if i == d else s for i, s in enumerate(a.shape))
    if ignore_nan:
        count = (~nan).sum(axis=d, keepdims=True)
    else:
        count = xp.full(red, a.shape[d])
    has_nan = nan.any(axis=d, keepdims=True)
    order = xp.argsort(a, axis=d, kind="stable")  # once for every q
    outs = []
    for qv in qa.reshape(-1):
        pos = qv * (xp.maximum(count, 1) - 1).astype(np.float64)
        lo = xp.floor(pos).astype(np.int64)
        hi = xp.ceil(pos).astype(np.int64)
        v_lo, _ = _pick(src, lo, d, True, order)
        v_hi, _ = _pick(src, hi, d, True, order)
        if interpolation == "lower":
            v = v_lo
        elif interpolation == "higher":
            v = v_hi
        elif interpolation == "nearest":
            v = _pick(src, xp.round(pos).astype(np.int64), d, True, order)[0]
        elif interpolation == "midpoint":
            v = (v_lo + v_hi) * 0.5
        else:
            frac = _const((pos - lo).astype(src.dtype))
            v = v_lo + frac * (v_hi - v_lo)
        bad = (count == 0) if ignore_nan else has_nan
        if bool(bad.any()):
            from .tensor import where
            v = where(bad, xp.asarray(np.nan, dtype=src.dtype), v)
        if dim is None:
            v = v.reshape((1,) * x.ndim) if keepdim else v.reshape(())
        elif not keepdim:
            v = v.squeeze(d)
        outs.append(v)
    if qa.ndim == 0:
        return outs[0]
    from .tensor import stack
    return stack(outs, 0)


def quantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """torch's ``quantile`` (``q`` a number or 1-D; ``interpolation`` linear, lower, higher,
    midpoint, nearest); a nan in a slice gives nan there."""
    return _quantile(x, q, dim, keepdim, interpolation, False)


def nanquantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring nan (an all-nan slice gives nan)."""
    return _quantile(x, q, dim, keepdim, interpolation, True)


def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """torch's ``unique`` (always sorted): the values, then ``inverse`` and ``counts`` when
    asked (int64); no gradient."""
    x = _tensor(x)
    xp = xp_of(x._data)
    out = xp.unique(x._data, return_inverse=True, return_counts=True, axis=dim)
    vals, inv, counts = out
    inv = inv.reshape(x.shape if dim is None else (x.shape[dim],)).astype(np.int64)
    res = [_const(vals)]
    if return_inverse:
        res.append(_const(inv))
    if return_counts:
        res.append(_const(counts.astype(np.int64)))
    return res[0] if len(res) == 1 else tuple(res)


def bincount(x, weights=None, minlength=0):
    """torch's ``bincount`` of a 1-D non-negative integer tensor (int64, or the weights'
    float dtype); no gradient (torch's neither)."""
    x = _tensor(x)
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise ValueError(f"bincount needs a 1-D integer tensor, got dtype {x.dtype} and shape "
                         f"{tuple(x.shape)}")
    xp = xp_of(x._data)
    if x.shape[0] and int(x._data.min()) < 0:
        raise ValueError("bincount needs non-negative values")
    if weights is None:
        return _const(xp.bincount(x._data, minlength=int(minlength)).astype(np.int64))
    w = _tensor(weights)
    if is_grad_enabled() and w.requires_grad:
        raise RuntimeError("bincount has no gradient (torch's neither): pass weights.detach() "
                           "or use index_put(..., accumulate=True), which has one")
    wd = w._data
    dt = wd.dtype if wd.dtype.kind == "f" else np.float64
    return _const(xp.bincount(x._data, weights=wd, minlength=int(minlength)).astype(dt))


def _raw_indices(indices):
    Tensor, _ = _T()
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put: indices must be a tuple of index tensors, e.g. (rows, cols)")
    return tuple(i._data if isinstance(i, Tensor) else np.asarray(i) for i in indices)


class _IndexPut(Function):
    def forward(self, a, v, index=None, accumulate=False):
        self.index, self.acc, self.sv = index, accumulate, v.shape
        out = a.copy()
        if accumulate:
            S.scatter_add(out, index, xp_of(a).broadcast_to(v, out[index].shape))
        else:
            out[index] = v
        return out

    def backward(self, g):
        ga = gv = None
        if self.needs_input_grad[0]:
            ga = g if self.acc else g.copy()
            if not self.acc:
                ga[self.index] = 0
        if self.needs_input_grad[1]:
            gv = unbroadcast(g[self.index], self.sv)
        return ga, gv


def index_put(x, indices, values, accumulate=False):
    """torch's out-of-place ``index_put``: ``x`` with ``x[indices] = values`` (``+=`` with
    ``accumulate``, repeats adding up); differentiable in ``x`` and ``values``."""
    x = _tensor(x)
    v = values if isinstance(values, _T()[0]) else _const(xp_of(x._data).asarray(values,
                                                                                    x.dtype))
    if v.dtype != x.dtype:
        v = v.astype(x.dtype)
    return _IndexPut.apply(x, v, index=_raw_indices(indices), accumulate=bool(accumulate))


def index_put_(x, indices, values, accumulate=False):
    """torch's in-place ``index_put_`` (a parameter only under ``no_grad``, as torch asks)."""
    from .tensor_torch import _assign
    return _assign(x, index_put(x, indices, values, accumulate), "index_put_")


def get_default_dtype():
    """The dtype of float tensors made from Python numbers (float32 unless set)."""
    return _default_dtype.FLOAT


def set_default_dtype(dtype):
    """torch's ``set_default_dtype``: float32 or float64 (``default_dtype.py``)."""
    _default_dtype.set_default_dtype(dtype)


from . import func_all_r29b as func  # noqa: E402,F401  (torch.func, forward mode too)
from .func_r29 import vmap  # noqa: E402,F401  (torch.vmap)
from .tensor_r29 import FORMS as _tensor_r29_forms  # noqa: E402
from .tensor_r29 import as_strided, gradient, histogram, polar, vander  # noqa: E402,F401
from .torch_compile_r29 import (  # noqa: E402,F401
    backends,
    compile,  # noqa: E402,F401,A004  (torch.compile)
    jit,
)

globals().update(_tensor_r29_forms)  # torch.add, torch.argmin, ...: tensor_r29.FUNCTION_FORMS
from .tensor_r29b import FUNCTIONS as _tensor_r29b_functions  # noqa: E402

globals().update(_tensor_r29b_functions)  # torch.cross, torch.mode, ...: tensor_r29b.TOP_LEVEL
from .layout_r45 import like_layout as _like_layout  # noqa: E402

randint_like = _like_layout(randint_like)  # noqa: F821 - round 45 (h7): torch's layout


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """torch's ``scalar_tensor``: a zero-dim tensor of the default float dtype (or
    ``dtype``)."""
    from . import default_dtype as _dd

    _, tensor = _T()
    return tensor(s, dtype=dtype or _dd.FLOAT, device=device, requires_grad=requires_grad)


def mvlgamma(input, p):  # noqa: A002 - torch's name
    """torch's ``mvlgamma``: ``special.multigammaln``."""
    from .special_r32 import multigammaln

    return multigammaln(input, p)


def i0(input):  # noqa: A002 - torch's name
    """torch's ``i0``: ``special.i0``."""
    from .special_r32 import i0 as _i0

    return _i0(input)


def swapdims(input, dim0, dim1):  # noqa: A002 - torch's name
    """torch's ``swapdims``: ``input.swapdims(dim0, dim1)``."""
    return input.swapdims(dim0, dim1)

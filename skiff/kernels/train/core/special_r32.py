"""Round 32: more of torch's ``special`` names, forward on scipy's (cupyx's on a GPU) ufuncs:
``entr``, ``xlog1py``, ``log_ndtr`` (tail-safe), ``ndtri``, ``erfcx``, ``i0``/``i0e``/``i1``/
``i1e``, ``multigammaln``, (round 37) ``gammainc``/``gammaincc`` with torch's gradients;
``zeta``, ``bessel_j0``/``j1``/``y0``/``y1`` values only (torch has no gradient for them either)."""

from __future__ import annotations

import math

import numpy as np

from . import default_dtype as _dd
from .autograd import Function, xp_of
from .ops_math import unbroadcast
from .tensor_math_r27 import _special

__all__ = ["entr", "xlog1py", "log_ndtr", "ndtri", "erfcx", "i0", "i0e", "i1", "i1e",
           "multigammaln", "zeta", "gammainc", "gammaincc", "bessel_j0", "bessel_j1",
           "bessel_y0", "bessel_y1"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _sp(x, name):
    return _special(name)(x)


def _derivative(kind, a, out):
    """d out / d a of the one-argument functions."""
    xp = xp_of(a)
    with np.errstate(all="ignore"):
        if kind == "entr":
            # torch's ``-(1 + log x)``: +inf at 0 (the slope of -x log x there), nan below
            return xp.where(a > 0, -(xp.log(a) + 1), xp.where(a == 0, xp.inf, xp.nan))
        if kind == "log_ndtr":
            return xp.exp(-0.5 * a * a - _LOG_SQRT_2PI - out)
        if kind == "ndtri":
            return math.sqrt(2 * math.pi) * xp.exp(0.5 * out * out)
        if kind == "erfcx":
            return 2 * a * out - 2 / math.sqrt(math.pi)
        if kind == "i0":
            return _sp(a, "i1")(a)
        if kind == "i0e":
            return _sp(a, "i1e")(a) - xp.sign(a) * out
        if kind == "i1":
            safe = xp.where(a == 0, 1.0, a)
            return xp.where(a == 0, 0.5, _sp(a, "i0")(a) - out / safe)
        if kind == "i1e":
            safe = xp.where(a == 0, 1.0, a)
            return xp.where(a == 0, 0.5, _sp(a, "i0e")(a) - out * (xp.sign(a) + 1 / safe))
    raise NotImplementedError(kind)  # pragma: no cover


class _Unary(Function):
    def forward(self, a, kind="i0"):
        self.kind = kind
        with np.errstate(all="ignore"):
            out = _sp(a, kind)(a).astype(a.dtype, copy=False)
        self.save_for_backward(a, out)
        return out

    def backward(self, g):
        a, out = self.saved
        return g * _derivative(self.kind, a, out).astype(g.dtype, copy=False)


class _Xlog1py(Function):
    """``x * log1p(y)``, 0 where ``x == 0`` (y not nan); gradients ``log1p(y)`` (0 where
    ``x == 0`` and ``y <= -1``, torch's) and ``x / (1 + y)``."""

    def forward(self, x, y):
        self.save_for_backward(x, y)
        with np.errstate(all="ignore"):
            return _sp(x, "xlog1py")(x, y).astype(np.result_type(x, y), copy=False)

    def backward(self, g):
        x, y = self.saved
        xp = xp_of(g)
        nx, ny = self.needs_input_grad
        with np.errstate(all="ignore"):
            # torch's: log1p(y), 0 only where x == 0 and y <= -1 (where log1p(y) is -inf/nan)
            gx = unbroadcast(g * xp.where((x == 0) & (y <= -1), 0.0, xp.log1p(y)),
                             x.shape) if nx else None
            gy = unbroadcast(g * x / (1 + y), y.shape) if ny else None
        return gx, gy


def _tensor(v, like=None):
    from .tensor import Tensor

    if isinstance(v, Tensor):
        return v
    if like is not None and isinstance(v, (int, float)):
        return Tensor(np.asarray(v, dtype=like.dtype))
    return Tensor(np.asarray(v))


def _float(t):
    t = _tensor(t)
    return t.astype(_dd.FLOAT) if t.dtype.kind in "iub" else t


def _unary(kind):
    def fn(input):  # noqa: A002 - torch's name
        return _Unary.apply(_float(input), kind=kind)

    fn.__name__ = kind
    fn.__doc__ = f"torch's ``special.{kind}`` (scipy's forward), with its gradient."
    return fn


entr = _unary("entr")
log_ndtr = _unary("log_ndtr")
ndtri = _unary("ndtri")
erfcx = _unary("erfcx")
i0 = _unary("i0")
i0e = _unary("i0e")
i1 = _unary("i1")
i1e = _unary("i1e")


def xlog1py(input, other):  # noqa: A002
    from .tensor import _promote

    x = input if hasattr(input, "dtype") else _tensor(input, like=_float(other))
    y = other if hasattr(other, "dtype") else _tensor(other, like=_float(x))
    x, y = _promote(_float(x), _float(y))
    return _Xlog1py.apply(x, y)


class _GammaInc(Function):
    """P(a, x) or Q(a, x) (scipy's), its gradient in ``x`` the Gamma(a, 1) density."""

    def forward(self, a, x, upper=False):
        self.save_for_backward(a, x)
        self.upper = upper
        return _sp(a, "gammaincc" if upper else "gammainc")(a, x).astype(
            np.result_type(a, x), copy=False)

    def backward(self, g):
        a, x = self.saved
        if self.needs_input_grad[0]:
            raise NotImplementedError("the derivative of igamma/igammac in its first argument "
                                      "is not implemented (torch's neither)")
        xp = xp_of(g)
        with np.errstate(all="ignore"):
            d = xp.exp((a - 1) * xp.log(x) - x - _sp(a, "gammaln")(a))
        return None, unbroadcast(g * (-d if self.upper else d).astype(g.dtype), x.shape)


def _gammainc(input, other, upper):  # noqa: A002
    from .tensor import _promote

    a = input if hasattr(input, "dtype") else _tensor(input, like=_float(other))
    x = other if hasattr(other, "dtype") else _tensor(other, like=_float(a))
    a, x = _promote(_float(a), _float(x))
    return _GammaInc.apply(a, x, upper=upper)


def gammainc(input, other):  # noqa: A002 - torch's names
    """torch's ``special.gammainc``: the regularized lower incomplete gamma P(a, x),
    differentiable in ``x`` (in ``a`` torch's backward raises, and so does this one)."""
    return _gammainc(input, other, False)


def gammaincc(input, other):  # noqa: A002
    """torch's ``special.gammaincc``: Q(a, x) = 1 - P(a, x)."""
    return _gammainc(input, other, True)


def multigammaln(input, p):  # noqa: A002
    """``log`` of the multivariate gamma function of dimension ``p`` (torch's ``mvlgamma``):
    ``p (p - 1) / 4 log(pi) + sum_j lgamma(x - j / 2)``; torch 2.13 computes it for every
    ``x`` (older torch refused ``x <= (p - 1) / 2``) and refuses ``p < 1``."""
    x = _float(input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    out = (x - 0.0).lgamma()
    for j in range(1, p):
        out = out + (x - j / 2).lgamma()
    return out + p * (p - 1) / 4 * math.log(math.pi)


def _values(name, *args):
    from .tensor import Tensor, _promote

    ts = [_float(a) if hasattr(a, "dtype") else a for a in args]
    if len(ts) == 2:
        ts = list(_promote(*ts))
        ts = [t if hasattr(t, "dtype") else _tensor(t, like=ts[0] if hasattr(ts[0], "dtype")
                                                   else ts[1]) for t in ts]
    arrays = [t._data for t in ts]
    with np.errstate(all="ignore"):
        out = _sp(arrays[0], name)(*arrays)
    return Tensor._make(out.astype(np.result_type(*arrays), copy=False), False, None, 0)


_NO_ZETA_X = "the derivative for 'zeta' is not implemented."


class _Zeta(Function):
    """Hurwitz zeta with torch's derivatives (round 47; it was values only, so a gradient in
    ``q`` was silently none): ``d/dq = -x zeta(x + 1, q)``, to any order; in ``x`` none
    (torch's NotImplementedError, raised when the gradient is taken)."""

    def forward(self, x, q):
        self.save_for_backward(x, q)
        with np.errstate(all="ignore"):
            return _sp(x, "zeta")(x, q).astype(np.result_type(x, q), copy=False)

    def backward(self, g):
        x, q = self.saved
        if self.needs_input_grad[0]:
            raise NotImplementedError(_NO_ZETA_X)
        with np.errstate(all="ignore"):
            d = -x * _sp(x, "zeta")(x + 1, q)
        return None, unbroadcast(g * d, q.shape)

    def backward_t(self, want, g):
        from .double_helpers import input_t, unbroadcast_t

        x, q = self.saved
        if want[0]:
            raise NotImplementedError(_NO_ZETA_X)
        return None, unbroadcast_t(g * (-x) * _Zeta.apply(x + 1, input_t(self, 1, q)), q.shape)


def zeta(input, other):  # noqa: A002
    """Hurwitz zeta ``sum_k (k + q) ** -x``; differentiable in ``q`` (``other``), as torch's."""
    from .autograd import is_grad_enabled
    from .tensor import _promote

    if not is_grad_enabled() or not any(getattr(a, "requires_grad", False)
                                        for a in (input, other)):
        return _values("zeta", input, other)
    ts = [_float(a) if hasattr(a, "dtype") else a for a in (input, other)]
    ts = list(_promote(*ts))
    ts = [t if hasattr(t, "dtype") else _tensor(t, like=ts[0] if hasattr(ts[0], "dtype")
                                               else ts[1]) for t in ts]
    return _Zeta.apply(*ts)


def bessel_j0(input):  # noqa: A002
    return _values("j0", input)


def bessel_j1(input):  # noqa: A002
    return _values("j1", input)


def bessel_y0(input):  # noqa: A002
    return _values("y0", input)


def bessel_y1(input):  # noqa: A002
    return _values("y1", input)

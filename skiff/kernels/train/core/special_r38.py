"""Round 38: the rest of torch's ``special`` names: ``polygamma``, ``round``, the modified
Bessel functions (``modified_bessel_i0/i1/k0/k1``, ``scaled_modified_bessel_k0/k1``),
``spherical_bessel_j0``, ``airy_ai`` (scipy's values), and the orthogonal polynomials
(``chebyshev_polynomial_t/u/v/w`` and their ``shifted_`` forms, ``hermite_polynomial_h/he``,
``laguerre_polynomial_l``, ``legendre_polynomial_p``) by their three-term recurrences, ``n``
truncated to an integer and a negative ``n`` giving 0 (torch's). Values only: torch 2.13 has
no gradient for any of them."""

from __future__ import annotations

import numpy as np

from . import default_dtype as _dd
from .special_r32 import _sp, _tensor
from .tensor_math_r27 import polygamma

__all__ = ["polygamma", "round", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]


def round(input, *, decimals=0):  # noqa: A001,A002 - torch's names
    """torch's ``special.round``: ``torch.round(input, decimals=)``."""
    return _tensor(input).round(decimals=decimals)


def _out(dtypes):
    floats = [d for d in dtypes if d is not None and d.kind == "f"]
    return np.result_type(*floats) if floats else np.dtype(_dd.FLOAT)


def _make(values, like_dtype):
    from .tensor import Tensor

    return Tensor._make(np.asarray(values).astype(like_dtype, copy=False), False, None, 0)


def _unary(fn, name):
    def op(input):  # noqa: A002
        x = _tensor(input)
        dt = _out([x.dtype])
        with np.errstate(all="ignore"):
            return _make(fn(x._data.astype(np.float64)), dt)

    op.__name__ = name
    op.__doc__ = f"torch's ``special.{name}`` (values; no gradient, as torch's)."
    return op


def _sph_j0(x):
    with np.errstate(all="ignore"):
        return np.where(x == 0, 1.0, np.sin(x) / np.where(x == 0, 1.0, x))


modified_bessel_i0 = _unary(lambda x: _sp(x, "i0")(x), "modified_bessel_i0")
modified_bessel_i1 = _unary(lambda x: _sp(x, "i1")(x), "modified_bessel_i1")
modified_bessel_k0 = _unary(lambda x: _sp(x, "k0")(x), "modified_bessel_k0")
modified_bessel_k1 = _unary(lambda x: _sp(x, "k1")(x), "modified_bessel_k1")
scaled_modified_bessel_k0 = _unary(lambda x: _sp(x, "k0e")(x), "scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _unary(lambda x: _sp(x, "k1e")(x), "scaled_modified_bessel_k1")
spherical_bessel_j0 = _unary(_sph_j0, "spherical_bessel_j0")
airy_ai = _unary(lambda x: _sp(x, "airy")(x)[0], "airy_ai")


# (p0(x), p1(x), step(k, x, p_k, p_{k-1}) -> p_{k+1}) of each family
_CHEB = lambda k, x, a, b: 2 * x * a - b  # noqa: E731
_FAMILIES = {
    "t": (lambda x: x, _CHEB),
    "u": (lambda x: 2 * x, _CHEB),
    "v": (lambda x: 2 * x - 1, _CHEB),
    "w": (lambda x: 2 * x + 1, _CHEB),
    "h": (lambda x: 2 * x, lambda k, x, a, b: 2 * x * a - 2 * k * b),
    "he": (lambda x: x, lambda k, x, a, b: x * a - k * b),
    "l": (lambda x: 1 - x, lambda k, x, a, b: ((2 * k + 1 - x) * a - k * b) / (k + 1)),
    "p": (lambda x: x, lambda k, x, a, b: ((2 * k + 1) * x * a - k * b) / (k + 1)),
}


def _polynomial(family, shifted, name):
    first, step = _FAMILIES[family]

    def op(input, n):  # noqa: A002
        x, nt = _tensor(input), _tensor(n)
        dt = _out([getattr(input, "dtype", None), getattr(n, "dtype", None)])
        xa = x._data.astype(np.float64)
        if shifted:
            xa = 2 * xa - 1
        na = np.trunc(nt._data.astype(np.float64))
        xa, na = np.broadcast_arrays(xa, na)
        prev, cur = np.ones_like(xa), first(xa)
        out = np.where(na == 0, prev, 0.0)
        out = np.where(na == 1, cur, out)
        top = int(na.max()) if na.size else 0
        with np.errstate(all="ignore"):
            for k in range(1, top):
                prev, cur = cur, step(k, xa, cur, prev)
                out = np.where(na == k + 1, cur, out)
        return _make(out, dt)

    op.__name__ = name
    op.__doc__ = f"torch's ``special.{name}(input, n)`` (values; no gradient, as torch's)."
    return op


chebyshev_polynomial_t = _polynomial("t", False, "chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial("u", False, "chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial("v", False, "chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial("w", False, "chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _polynomial("t", True, "shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _polynomial("u", True, "shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _polynomial("v", True, "shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _polynomial("w", True, "shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial("h", False, "hermite_polynomial_h")
hermite_polynomial_he = _polynomial("he", False, "hermite_polynomial_he")
laguerre_polynomial_l = _polynomial("l", False, "laguerre_polynomial_l")
legendre_polynomial_p = _polynomial("p", False, "legendre_polynomial_p")

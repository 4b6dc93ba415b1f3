"""Elementwise math, matmul and reductions as autograd nodes (numpy broadcasting rules).

Each node keeps only what its backward reads: ``Mul`` keeps both operands, ``Exp`` its output,
``Relu`` its output (a view shared with the next layer's saved input, so no extra bytes),
``Sum`` nothing but the input shape, ``Prod`` its input (the gradient at a zero needs the
others' product).
"""

from __future__ import annotations

import numpy as np

from . import half_cast as _hc
from .autograd import Function, xp_of
from .gemm import mm
from .shape_error import check_matmul_dtypes

__all__ = [
    "unbroadcast",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Neg",
    "MatMul",
    "Exp",
    "Log",
    "Tanh",
    "Sqrt",
    "Abs",
    "Sigmoid",
    "Relu",
    "Sum",
    "Mean",
    "Var",
    "Max",
    "Min",
    "Cumsum",
    "Prod",
    "Cast",
]


def _shape(a):
    return a.shape if hasattr(a, "shape") else ()


def unbroadcast(g, shape):
    """Sum ``g`` over the axes that broadcasting added or stretched, back to ``shape``."""
    if g.shape == shape:
        return g
    nd = g.ndim - len(shape)
    if nd > 0:
        g = g.sum(axis=tuple(range(nd)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g.reshape(shape)


class Add(Function):
    def forward(self, a, b):
        self.sa, self.sb = _shape(a), _shape(b)
        return a + b

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (unbroadcast(g, self.sa) if na else None, unbroadcast(g, self.sb) if nb else None)


class Sub(Function):
    def forward(self, a, b):
        self.sa, self.sb = _shape(a), _shape(b)
        return a - b

    def backward(self, g):
        na, nb = self.needs_input_grad
        return (unbroadcast(g, self.sa) if na else None, unbroadcast(-g, self.sb) if nb else None)


class Mul(Function):
    def forward(self, a, b):
        na, nb = self.needs_input_grad
        self.save_for_backward(b if na else None, a if nb else None)
        self.sa, self.sb = _shape(a), _shape(b)
        return a * b

    def backward(self, g):
        b, a = self.saved
        na, nb = self.needs_input_grad
        return (
            unbroadcast(g * b, self.sa) if na else None,
            unbroadcast(g * a, self.sb) if nb else None,
        )


class Div(Function):
    def forward(self, a, b):
        out = a / b
        self.save_for_backward(b, out if self.needs_input_grad[1] else None)
        self.sa, self.sb = _shape(a), _shape(b)
        return out

    def backward(self, g):
        b, out = self.saved
        na, nb = self.needs_input_grad
        gb = g / b
        return (
            unbroadcast(gb, self.sa) if na else None,
            unbroadcast(-gb * out, self.sb) if nb else None,
        )


class Pow(Function):
    """``a ** b``; b may be a python number (the common case) or a tensor."""

    def forward(self, a, b):
        out = a**b
        self.save_for_backward(a, b, out)
        self.sa, self.sb = _shape(a), _shape(b)
        return out

    def backward(self, g):
        a, b, out = self.saved
        na, nb = self.needs_input_grad
        ga = gb = None
        xp = xp_of(a)
        if na:  # torch's: 0 where the exponent is 0 (0 ** -1 made x ** 0 nan at 0)
            if np.isscalar(b):
                ga = g * 2 * a if b == 2 else (g * b * a ** (b - 1) if b != 0 else
                                               xp.zeros_like(g * a))
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    ga = xp.where(b == 0, 0, g * b * a ** (b - 1))
            ga = unbroadcast(ga, self.sa)
        if nb:  # torch's: 0 where a == 0 and b >= 0 (not 0 * log 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = g * out * xp.log(a)
                if not (np.iscomplexobj(a) or np.iscomplexobj(b)):
                    gb = xp.where((a == 0) & (b >= 0), 0, gb)
            gb = unbroadcast(gb, self.sb)
        return ga, gb


class Neg(Function):
    def forward(self, a):
        return -a

    def backward(self, g):
        return -g


class MatMul(Function):
    """``a @ b`` with numpy's rules (1-D operands, broadcast batch dimensions)."""

    def forward(self, a, b):
        self.save_for_backward(a, b)
        check_matmul_dtypes(a, b)
        try:
            out = mm(a, b) if a.ndim >= 2 and b.ndim >= 2 else a @ b
        except ValueError as e:
            from .shape_error import ShapeError, dims

            if a.ndim == b.ndim == 2:
                raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({dims(a.shape)} "
                                 f"and {dims(b.shape)})") from e
            raise ShapeError(f"matmul: {e}") from e
        if a.dtype == b.dtype and out.dtype != a.dtype and a.dtype.itemsize == 2:
            out = _hc.cast(out, a.dtype)  # bfloat16 @ bfloat16 is bfloat16 (torch's)
        return out

    def backward(self, g):
        ga, gb = self._grads(g)
        a, b = self.saved
        if ga is not None and ga.dtype != a.dtype and a.dtype.itemsize == 2:
            ga = _hc.cast(ga, a.dtype)
        if gb is not None and gb.dtype != b.dtype and b.dtype.itemsize == 2:
            gb = _hc.cast(gb, b.dtype)
        return ga, gb

    def _grads(self, g):
        a, b = self.saved
        na, nb = self.needs_input_grad
        xp = xp_of(g)
        a2, b2, g2 = a, b, g
        if a.ndim == 1:
            a2 = a[None, :]
            g2 = xp.expand_dims(g2, -2) if g2.ndim else g2.reshape(1)  # 1-D @ 1-D: 0-d g
        if b.ndim == 1:
            b2 = b[:, None]
            g2 = xp.expand_dims(g2, -1)
        ga = gb = None
        if na:
            if a2.ndim > 2 and b2.ndim == 2:
                ga = mm(g2, b2.T).reshape(a.shape)
            else:
                ga = unbroadcast(mm(g2, xp.swapaxes(b2, -1, -2)), a2.shape).reshape(a.shape)
        if nb:
            if b2.ndim == 2 and a2.ndim > 2:
                k = a2.shape[-1]
                gb = mm(a2.reshape(-1, k).T, g2.reshape(-1, g2.shape[-1])).reshape(b.shape)
            else:
                gb = unbroadcast(mm(xp.swapaxes(a2, -1, -2), g2), b2.shape).reshape(b.shape)
        return ga, gb


class Exp(Function):
    def forward(self, a):
        out = xp_of(a).exp(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        (out,) = self.saved
        return g * out


class Log(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).log(a)

    def backward(self, g):
        (a,) = self.saved
        return g / a


class Log1p(Function):
    """``log(1 + a)``, exact for tiny ``a`` (torch's ``log1p``)."""

    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).log1p(a)

    def backward(self, g):
        (a,) = self.saved
        return g / (1 + a)


class Expm1(Function):
    """``exp(a) - 1``, exact for tiny ``a`` (torch's ``expm1``)."""

    def forward(self, a):
        out = xp_of(a).expm1(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        (out,) = self.saved
        return g * (out + 1)


class Tanh(Function):
    def forward(self, a):
        out = xp_of(a).tanh(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        (out,) = self.saved
        return g * (1 - out * out)


class Sqrt(Function):
    def forward(self, a):
        out = xp_of(a).sqrt(a)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        (out,) = self.saved
        return g / (2 * out)


class Sin(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).sin(a)

    def backward(self, g):
        (a,) = self.saved
        return g * xp_of(a).cos(a)


class Cos(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).cos(a)

    def backward(self, g):
        (a,) = self.saved
        return -g * xp_of(a).sin(a)


class Abs(Function):
    def forward(self, a):
        self.save_for_backward(a)
        return xp_of(a).abs(a)

    def backward(self, g):
        (a,) = self.saved
        return g * xp_of(a).sign(a)


class Sigmoid(Function):
    def forward(self, a):
        xp = xp_of(a)
        if a.dtype.kind == "c":  # torch's complex sigmoid, 1 / (1 + e^-z) (|z| has no sign)
            out = (1 / (1 + xp.exp(-a))).astype(a.dtype, copy=False)
            self.save_for_backward(out)
            return out
        # stable for large |a|: exp of a non-positive number only
        e = xp.exp(-xp.abs(a))
        out = xp.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype, copy=False)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        (out,) = self.saved
        return g * out * (1 - out)


class Relu(Function):
    def forward(self, a):
        out = xp_of(a).maximum(a, 0)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        (out,) = self.saved
        return g * (out > 0)


def _norm_axis(axis, ndim):
    """Reduction axes in ``[0, ndim)``, sorted; torch's IndexError for a dim out of
    ``[-ndim, ndim)`` (a 0-d tensor takes 0 and -1), RuntimeError for one given twice."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    lo, hi = -max(ndim, 1), max(ndim, 1) - 1
    out = []
    for a in axis:
        a = int(a)
        if not lo <= a <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, "
                             f"{hi}], but got {a})")
        a = a % ndim if ndim else 0
        if a in out:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        out.append(a)
    return tuple(sorted(out)) if ndim else ()  # a 0-d tensor's dim 0 / -1: nothing to reduce


def _expand_grad(g, shape, axes, keepdims):
    """Broadcast a reduced gradient back to the input shape (a view, no copy)."""
    xp = xp_of(g)
    if not keepdims:
        kshape = tuple(1 if i in axes else s for i, s in enumerate(shape))
        g = g.reshape(kshape)
    return xp.broadcast_to(g, shape)


class Sum(Function):
    def forward(self, a, axis=None, keepdims=False):
        self.shape = a.shape
        self.axes = _norm_axis(axis, a.ndim)
        self.keepdims = keepdims
        return xp_of(a).sum(a, axis=self.axes, keepdims=keepdims)

    def backward(self, g):
        return _expand_grad(g, self.shape, self.axes, self.keepdims)


class Mean(Function):
    def forward(self, a, axis=None, keepdims=False):
        self.shape = a.shape
        self.axes = _norm_axis(axis, a.ndim)
        self.keepdims = keepdims
        self.n = int(np.prod([a.shape[i] for i in self.axes])) if self.axes else 1
        if self.n == 0:  # torch's nan, quietly (numpy's mean warns "Mean of empty slice")
            return xp_of(a).sum(a, axis=self.axes, keepdims=keepdims) / 0
        return xp_of(a).mean(a, axis=self.axes, keepdims=keepdims)

    def backward(self, g):
        return _expand_grad(g / self.n, self.shape, self.axes, self.keepdims)


class Var(Function):
    """Variance with ``ddof`` (0: population variance, like numpy); of a complex tensor the
    mean of ``|z - mean|^2``, real, with torch's gradient ``2 g (z - mean) / denom``."""

    complex_aware = True  # a real input's gradient is real; a complex one's is already torch's

    def forward(self, a, axis=None, keepdims=False, ddof=0):
        xp = xp_of(a)
        self.axes = _norm_axis(axis, a.ndim)
        self.keepdims = keepdims
        n = int(np.prod([a.shape[i] for i in self.axes])) if self.axes else 1
        self.denom = max(n - ddof, 0)
        if n == 0:  # nan, quietly (numpy's mean warns "Mean of empty slice")
            centered = a - xp.sum(a, axis=self.axes, keepdims=True) / 0
        else:
            centered = a - a.mean(axis=self.axes, keepdims=True)
        self.save_for_backward(centered)
        if centered.dtype.kind == "c":  # torch's: |z - mean|^2, a real result
            sq = centered.real * centered.real + centered.imag * centered.imag
            return xp.sum(sq, axis=self.axes, keepdims=keepdims) / self.denom
        return xp.sum(centered * centered, axis=self.axes, keepdims=keepdims) / self.denom

    def backward(self, g):
        (centered,) = self.saved
        if getattr(g, "dtype", None) is not None and g.dtype.kind == "c":
            g = g.real  # the output is real: the real part is its gradient
        ge = _expand_grad(g, centered.shape, self.axes, self.keepdims)
        return ge * centered * (2.0 / self.denom if self.denom else float("inf"))  # torch's nan


class _Extreme(Function):
    op = "max"

    def forward(self, a, axis=None, keepdims=False):
        xp = xp_of(a)
        self.axes = _norm_axis(axis, a.ndim)
        self.keepdims = keepdims
        out = getattr(xp, self.op)(a, axis=self.axes, keepdims=True)
        self.save_for_backward(a, out)
        return out if keepdims else out.reshape([s for i, s in enumerate(a.shape)
                                                 if i not in self.axes])

    def backward(self, g):
        a, out = self.saved
        mask = a == out
        # ties share the gradient evenly (like numpy-style amax)
        count = mask.sum(axis=self.axes, keepdims=True)
        ge = _expand_grad(g, a.shape, self.axes, self.keepdims)
        return ge * mask / count


class Max(_Extreme):
    op = "max"


class Min(_Extreme):
    op = "min"


class Cumsum(Function):
    """Running sum along ``axis``; the gradient is the reversed running sum of ``g``."""

    def forward(self, a, axis=0):
        self.axis = axis
        return xp_of(a).cumsum(a, axis=axis)

    def backward(self, g):
        xp = xp_of(g)
        rev = xp.flip(g, axis=self.axis)
        return xp.flip(xp.cumsum(rev, axis=self.axis), axis=self.axis)


class Prod(Function):
    """Product along ``axis`` (one axis); each gradient is the product of the others, from
    running products left and right of it (exact when an element is zero)."""

    def forward(self, a, axis=0, keepdims=False):
        self.axis, self.keepdims = axis, keepdims
        self.save_for_backward(a)
        return xp_of(a).prod(a, axis=axis, keepdims=keepdims)

    def backward(self, g):
        (a,) = self.saved
        xp, ax = xp_of(a), self.axis % a.ndim

        def part(lo, hi):
            return a[(slice(None),) * ax + (slice(lo, hi),)]

        ones = xp.ones_like(part(0, 1))
        left = xp.concatenate([ones, xp.cumprod(part(0, -1), axis=ax)], axis=ax)
        rev = xp.flip(part(1, None), axis=ax)
        right = xp.concatenate([xp.flip(xp.cumprod(rev, axis=ax), axis=ax), ones], axis=ax)
        ge = g if self.keepdims else xp.expand_dims(g, ax)
        return ge * left * right


class Cast(Function):
    def forward(self, a, dtype=None):
        self.src = a.dtype
        return _hc.cast(a, dtype)

    def backward(self, g):
        if g.dtype.kind == "c" and np.dtype(self.src).kind != "c":
            g = g.real  # real -> complex: the real part is the gradient (torch's, no warning)
        return _hc.cast(g, self.src)

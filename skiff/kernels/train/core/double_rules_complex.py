"""Double-backward rules of the complex ops and the transforms (round 35): ``create_graph=True``
through ``fft``/``ifft``/``rfft``/``irfft`` (any ``n``/``s``, ``dim``, ``norm``), ``.real``,
``.imag``, ``conj``, ``view_as_real``/``view_as_complex``, ``complex``, ``abs`` and ``sgn`` of
complex tensors: gradients of spectral losses can be differentiated again (gradient penalties,
Hessian-vector products, PINO-style residuals), as torch's.

Each rule is the node's first-order ``backward`` written with differentiable ops (the
transforms' adjoints are the other transforms, the crop/zero-pad of ``s`` is indexing and
``cat`` with zeros). The engine (:mod:`.double_backward`) conjugates the gradients around a
rule written for real arrays, as first order does, and keeps the real part of a complex
gradient bound for a real tensor.
"""

from __future__ import annotations

import numpy as np

from . import complex_r28 as C
from . import fft_r28 as F
from . import ops_math as M
from . import ops_shape as S
from .autograd import xp_of
from .double_helpers import input_t, output_t
from .double_rules import rule
from .tensor import Tensor

__all__ = ["fit_t", "to_complex_t"]


def _const(array):
    return Tensor._make(array, False, None, 0)


def fit_t(g, shape):
    """``fft_r28._fit`` on a tensor: cropped or zero-padded at the end of each axis."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    if any(a > b for a, b in zip(g.shape, shape)):
        g = S.GetItem.apply(g, index=tuple(slice(0, min(a, b)) for a, b in zip(g.shape, shape)))
    xp = xp_of(g._data)
    for ax, (a, b) in enumerate(zip(g.shape, shape)):
        if b > a:
            zshape = list(g.shape)
            zshape[ax] = b - a
            g = S.Cat.apply(g, _const(xp.zeros(zshape, dtype=g.dtype)), axis=ax)
    return g


def _tensor(x):
    return x if isinstance(x, Tensor) else _const(x)


def to_complex_t(g):
    """A real gradient tensor as a complex one (imaginary part 0), differentiably."""
    return C.MakeComplex.apply(g, _const(xp_of(g._data).zeros(g.shape, dtype=g.dtype)))


def _bins(g, axis, lo, hi, factor):
    """``g`` with the bins ``lo:hi`` along ``axis`` times ``factor`` (a constant weight)."""
    w = np.ones(g.shape[axis], dtype=np.float64)
    w[lo:hi] = factor
    shape = [1] * g.ndim
    shape[axis] = g.shape[axis]
    xp = xp_of(g._data)
    return g * _const(xp.asarray(w.reshape(shape), dtype=g._data.real.dtype))


# ---- the transforms -------------------------------------------------------------------------
def _c2c(self, want, g):
    other = F.FFTn if self.inverse else F.IFFTn
    sizes = tuple(g.shape[a] for a in self.axes)
    gi = fit_t(other.apply(g, s=sizes, axes=self.axes, norm=F._DUAL[self.norm]), self.in_shape)
    return C.Real.apply(gi) if self.real_in else gi


rule(F._C2C)(_c2c)


@rule(F.RFFTn)
def _rfftn(self, want, g):
    last, n = self.axes[-1], self.s[-1]
    mirrored = n - (n // 2 + 1)
    if mirrored > 0:
        g = _bins(g, last, 1, 1 + mirrored, 0.5)
    gi = F.IRFFTn.apply(g, s=tuple(self.s), axes=self.axes, norm=F._DUAL[self.norm])
    return fit_t(gi, self.in_shape)


@rule(F.IRFFTn)
def _irfftn(self, want, g):
    gi = F.RFFTn.apply(g, s=tuple(g.shape[a] for a in self.axes), axes=self.axes,
                       norm=F._DUAL[self.norm])
    last = self.axes[-1]
    twice = self.s[-1] - gi.shape[last]
    if twice > 0:
        gi = _bins(gi, last, 1, 1 + twice, 2.0)
    gi = fit_t(gi, self.in_shape)
    return C.Real.apply(gi) if self.in_dtype.kind != "c" else gi


# ---- parts, conjugates, views ---------------------------------------------------------------
@rule(C.Real)
def _real(self, want, g):
    return to_complex_t(g)


@rule(C.Imag)
def _imag(self, want, g):
    xp = xp_of(g._data)
    return C.MakeComplex.apply(_const(xp.zeros(g.shape, dtype=g.dtype)), g)


@rule(C.Conj)
def _conj(self, want, g):
    return C.Conj.apply(g)


@rule(C.ViewAsReal)
def _view_as_real(self, want, g):
    return C.MakeComplex.apply(S.GetItem.apply(g, index=(Ellipsis, 0)),
                               S.GetItem.apply(g, index=(Ellipsis, 1)))


@rule(C.ViewAsComplex)
def _view_as_complex(self, want, g):
    return C.ViewAsReal.apply(g)


@rule(C.MakeComplex)
def _make_complex(self, want, g):
    return (C.Real.apply(g) if want[0] else None, C.Imag.apply(g) if want[1] else None)


@rule(C.Sgn)
def _sgn(self, want, g):
    (s,) = self.saved
    a_t = _tensor(input_t(self, 0, s * self.mag))  # a = sgn(a) |a| (0 where a = 0)
    s_t = output_t(self, 0, s)
    xp = xp_of(s)
    zero = ~self.nonzero
    mag = M.Abs.apply(a_t) + _const(zero.astype(s.real.dtype))  # |a|, 1 where a = 0
    gi = (g - C.Real.apply(g * C.Conj.apply(s_t)) * s_t) / mag
    if zero.any():
        gi = gi * _const(xp.asarray(self.nonzero, dtype=s.real.dtype))
    return gi


_real_abs = M.Abs.backward_t


@rule(M.Abs)
def _abs(self, want, g):
    """A complex ``abs``'s gradient ``g * sgn(a)``: ``sgn`` is not locally constant there, so
    it stays in the graph (a real one's sign is: no second-order term, as torch)."""
    (a,) = self.saved
    if a.dtype.kind != "c":
        return _real_abs(self, want, g)
    return g * C.Sgn.apply(_tensor(input_t(self, 0, a)))

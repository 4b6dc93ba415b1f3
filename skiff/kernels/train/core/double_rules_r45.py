"""Round 45 (h7): double-backward rules of ``special.xlog1py``, ``special.gammainc``/
``gammaincc`` (in ``x``) and ``fmod``/``remainder`` (h12's "left" list), and of ``hardswish``,
``logsigmoid``, ``hardtanh`` (``relu6``, ``hardsigmoid``) and ``mish``: each derivative written
again on tensors so a gradient of a gradient through them matches torch's."""

from __future__ import annotations

import numpy as np

from . import ops_linalg as LA
from . import special_r32 as SP
from . import tensor_divmod as DM
from .autograd import Function, xp_of
from .double_helpers import input_t, output_t, tie_t, unbroadcast_t
from .double_rules import rule
from .nn.functional import activations_more as AM
from .nn.functional import pad_modes as PM
from .tensor import Tensor, where

__all__: list[str] = []


@rule(SP._Xlog1py)
def _xlog1py(self, want, g):
    """``g log1p(y)`` (0 where ``x == 0`` and ``y <= -1``, torch's) and ``g x / (1 + y)``."""
    x, y = self.saved
    x_t, y_t = input_t(self, 0, x), input_t(self, 1, y)
    y_t = y_t if isinstance(y_t, Tensor) else Tensor._make(np.asarray(y_t), False, None, 0)
    gx = gy = None
    if want[0]:
        off = (x == 0) & (y <= -1)
        with np.errstate(all="ignore"):
            lg = y_t.log1p()
        if bool(np.any(off)):
            lg = where(off, np.asarray(0.0, dtype=lg.dtype), lg)
        gx = unbroadcast_t(g * lg, np.shape(x))
    if want[1]:
        gy = unbroadcast_t(g * x_t / (1 + y_t), np.shape(y))
    return gx, gy


@rule(SP._GammaInc)
def _gammainc(self, want, g):
    """In ``x``: the Gamma(a, 1) density ``exp((a - 1) log x - x - lgamma(a))`` on tensors
    (minus it for the upper function); in ``a`` torch has no derivative either."""
    a, x = self.saved
    if want[0]:
        raise NotImplementedError("the derivative of igamma/igammac in its first argument is "
                                  "not implemented (torch's neither)")
    if not want[1]:
        return None, None
    x_t = input_t(self, 1, x)
    lga = SP._sp(a, "gammaln")(a)
    with np.errstate(all="ignore"):
        d = ((a - 1) * x_t.log() - x_t - lga).exp()
    return None, unbroadcast_t(g * (-d if self.upper else d), np.shape(x))


@rule(DM._Rem)
def _rem(self, want, g):
    """``g`` for ``a`` and ``-g q`` for ``b``, the quotient ``q`` (trunc for fmod, floor for
    remainder) a constant: both linear in ``g``."""
    a, b = self.saved
    ga = unbroadcast_t(g, self.sa) if want[0] else None
    gb = None
    if want[1]:
        with np.errstate(all="ignore"):
            q = np.trunc(a / b) if self.trunc else np.floor_divide(a, b)
        gb = unbroadcast_t(-g * q.astype(g.dtype), self.sb)  # q on a, b's device
    return ga, gb


# ---- activations torch differentiates twice (found with the rules above: no rule either) ----
@rule(AM._Hardswish)
def _hardswish(self, want, g):
    """``x / 3 + 1/2`` between -3 and 3 (a tensor there), 0 below, 1 above."""
    (x,) = self.saved
    x_t = input_t(self, 0, x)
    mid = (x > -3) & (x < 3)
    rest = np.where(x <= -3, 0.0, 1.0).astype(x.dtype)
    return (g * where(mid, x_t / 3 + 0.5, rest),)


@rule(AM._LogSigmoid)
def _logsigmoid(self, want, g):
    """``sigmoid(-x)`` on tensors."""
    x, _ = self.saved
    return (g * (-input_t(self, 0, x)).sigmoid(),)


@rule(PM._HardTanh)
def _hardtanh(self, want, g):
    """``g`` strictly inside the bounds, 0 elsewhere: linear in ``g``."""
    (x,) = self.saved  # tied to the input (torch's ``hardtanh_backward(grad, self)``)
    return (tie_t(g * ((x > self.lo) & (x < self.hi)).astype(x.dtype), input_t(self, 0, x)),)


@rule(PM._Mish)
def _mish(self, want, g):
    """``t + x sigmoid(x) (1 - t^2)``, ``t = tanh(softplus(x))``, on tensors."""
    x, _ = self.saved
    x_t = input_t(self, 0, x)
    sp = -AM._LogSigmoid.apply(-x_t)  # softplus(x), its derivative sigmoid(x) at 0 too
    t = sp.tanh()
    return (g * (t + x_t * x_t.sigmoid() * (1 - t * t)),)


# ---- linalg: a Hessian through det/logdet/inv/solve/diagonal (torch differentiates them to
# any order; every linalg node was refused here) ----------------------------------------------
class _DiagonalEmbed(Function):
    """``_Diagonal``'s backward as a node: ``g`` written on the diagonal of zeros; its own
    gradient is the diagonal again (both linear)."""

    def forward(self, g, shape=None, args=(0, 0, 1)):
        self.args = args
        node = LA._Diagonal.__new__(LA._Diagonal)
        node.shape, node.args = shape, args
        return LA._Diagonal.backward(node, g)

    def backward(self, gg):
        return xp_of(gg).diagonal(gg, *self.args).copy()


@rule(LA._Diagonal)
def _diagonal(self, want, g):
    return (_DiagonalEmbed.apply(g, shape=self.shape, args=self.args),)


@rule(_DiagonalEmbed)
def _diagonal_embed(self, want, g):
    offset, d1, d2 = self.args
    return (LA._Diagonal.apply(g, offset=offset, dim1=d1, dim2=d2),)


def _unbroadcast_view(a, shape):
    """The saved (broadcast) array ``a`` back at the input's ``shape`` (a view: broadcasting
    repeated the values)."""
    shape = tuple(shape)
    v = a[(0,) * (a.ndim - len(shape))]
    return v[tuple(slice(0, 1) if s == 1 and v.shape[i] != 1 else slice(None)
                   for i, s in enumerate(shape))]


def _real_only(a, name):
    if np.dtype(a.dtype).kind == "c":
        raise NotImplementedError(f"{name}: no double-backward rule for complex matrices here")


@rule(LA._Inv)
def _inv(self, want, g):
    """``-Y^T g Y^T`` with ``Y`` the node's own output."""
    (y,) = self.saved
    y_t = output_t(self, 0, y)
    return (-(y_t.mT @ g @ y_t.mT),)


@rule(LA._Det)
def _det(self, want, g):
    """``g det(A) A^-T``, ``det`` the node's output, the inverse a node of its own."""
    a, d = self.saved
    inv = LA._Inv.apply(input_t(self, 0, a))
    return ((g * output_t(self, 0, d))[..., None, None] * inv.mT,)


@rule(LA._LogAbsDet)
def _logabsdet(self, want, g):
    """``g A^-H``, the inverse a node (complex-aware; ``A^-T`` for a real ``A``)."""
    (a,) = self.saved
    return (g[..., None, None] * LA._Inv.apply(input_t(self, 0, a)).mH,)


@rule(LA._Solve)
def _solve(self, want, g):
    """``gB = A^-T g`` (a solve node), ``gA = -gB X^T`` (X the node's output)."""
    a, x = self.saved
    a_t = input_t(self, 0, _unbroadcast_view(a, self.sa))
    a_t = a_t if isinstance(a_t, Tensor) else Tensor._make(a_t, False, None, 0)
    gg = g.unsqueeze(-1) if self.vec else g
    gb = LA._Solve.apply(a_t.mT, gg)
    ga = None
    if want[0]:
        x_t = output_t(self, 0, x[..., 0]).unsqueeze(-1) if self.vec else output_t(self, 0, x)
        ga = unbroadcast_t(-(gb @ x_t.mT), self.sa)
    gb_out = gb[..., 0] if self.vec else gb
    return ga, (unbroadcast_t(gb_out, self.sb) if want[1] else None)


@rule(LA._SolveTriangular)
def _solve_triangular(self, want, g):
    """``gB = T^-T g`` (a triangular solve node on the other triangle), ``gA = -gB X^T`` on
    ``A``'s triangle (its diagonal left out when unit)."""
    t, x = self.saved
    a_t = input_t(self, 0, _unbroadcast_view(t, self.sa))
    a_t = a_t if isinstance(a_t, Tensor) else Tensor._make(a_t, False, None, 0)
    gb = LA._SolveTriangular.apply(a_t.mT, g, upper=not self.upper, unit=self.unit)
    ga = None
    if want[0]:
        ga = -(gb @ output_t(self, 0, x).mT)
        k = 1 if self.unit else 0
        ga = unbroadcast_t(ga.triu(k) if self.upper else ga.tril(-k), self.sa)
    return ga, (unbroadcast_t(gb, self.sb) if want[1] else None)

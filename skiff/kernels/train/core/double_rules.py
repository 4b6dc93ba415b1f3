"""Double-backward rules of the core ops: each covered node class gets a ``backward_t(want,
*grads)`` that computes what its ``backward`` computes, but from tensors with differentiable
ops, so the gradients it returns are themselves in the graph (``create_graph=True``).

``grads`` are tensors (one per output), ``want`` says per input whether its gradient is needed
(its path reaches an input asked for); a rule returns one tensor (or None) per input. A node
class without ``backward_t`` has no rule: the engine (:mod:`.double_backward`) refuses it by
name rather than give a silently wrong second derivative. The nn ops' rules are in
:mod:`.nn.functional.double_rules_nn`.
"""

from __future__ import annotations

import numpy as np

from . import ops_math as M
from . import ops_shape as S
from . import tensor_math_more as TM
from . import tensor_math_r27 as R27
from .autograd import Function, xp_of
from .double_helpers import expand_t, input_t, output_t, tie_t, unbroadcast_t
from .ops_shape import scatter_add
from .tensor import _ToDevice
from .tensor_more import _Clone

__all__ = ["rule", "IndexGrad", "GatherGrad"]


def rule(cls):
    """Decorator: install the function as ``cls.backward_t``."""
    def put(fn):
        cls.backward_t = fn
        return fn
    return put


# ---- elementwise arithmetic -------------------------------------------------------------------
@rule(M.Add)
def _add(self, want, g):
    return (unbroadcast_t(g, self.sa) if want[0] else None,
            unbroadcast_t(g, self.sb) if want[1] else None)


@rule(M.Sub)
def _sub(self, want, g):
    return (unbroadcast_t(g, self.sa) if want[0] else None,
            unbroadcast_t(-g, self.sb) if want[1] else None)


@rule(M.Mul)
def _mul(self, want, g):
    b, a = self.saved
    ga = unbroadcast_t(g * input_t(self, 1, b), self.sa) if want[0] else None
    gb = unbroadcast_t(g * input_t(self, 0, a), self.sb) if want[1] else None
    return ga, gb


@rule(M.Div)
def _div(self, want, g):
    b, out = self.saved
    gb_ = g / input_t(self, 1, b)
    ga = unbroadcast_t(gb_, self.sa) if want[0] else None
    gb = unbroadcast_t(-gb_ * output_t(self, 0, out), self.sb) if want[1] else None
    return ga, gb


@rule(M.Pow)
def _pow(self, want, g):
    a, b, out = self.saved
    a_t, b_t = input_t(self, 0, a), input_t(self, 1, b)
    ga = gb = None
    if want[0]:
        if np.isscalar(b) and b == 0:  # torch's zeros_like: a constant
            ga = g * 0.0
        elif np.isscalar(b):  # torch's ``self.pow(p - 1)``, a node even at p = 1 or 2
            ga = g * (M.Pow.apply(a_t, b - 1) * b)
        else:
            ga = g * (b_t * M.Pow.apply(a_t, b_t - 1))
        ga = unbroadcast_t(ga, self.sa)
    if want[1]:
        gb = unbroadcast_t(g * output_t(self, 0, out) * M.Log.apply(a_t), self.sb)
    return ga, gb


@rule(M.Neg)
def _neg(self, want, g):
    return -g


@rule(M.MatMul)
def _matmul(self, want, g):
    a, b = self.saved
    a_t, b_t = input_t(self, 0, a), input_t(self, 1, b)
    g2 = g
    # g as the (..., m, n) product of the 2-D forms: a 1-D operand's axis comes back (both
    # 1-D: a 0-d g becomes (1, 1); it became (1,) and the vector dot's gradient failed)
    if a.ndim == 1:
        a_t = S.Reshape.apply(a_t, shape=(1,) + a.shape)
        g2 = S.Reshape.apply(g2, shape=g2.shape[:-1] + (1,) + g2.shape[-1:] if g2.ndim
                             else (1,))
    if b.ndim == 1:
        b_t = S.Reshape.apply(b_t, shape=b.shape + (1,))
        g2 = S.Reshape.apply(g2, shape=g2.shape + (1,))
    a2s = (1,) + a.shape if a.ndim == 1 else a.shape
    b2s = b.shape + (1,) if b.ndim == 1 else b.shape
    ga = gb = None
    if want[0]:
        ga = unbroadcast_t(M.MatMul.apply(g2, _swap(b_t)), a2s)
        ga = S.Reshape.apply(ga, shape=a.shape) if ga.shape != a.shape else ga
    if want[1]:
        gb = unbroadcast_t(M.MatMul.apply(_swap(a_t), g2), b2s)
        gb = S.Reshape.apply(gb, shape=b.shape) if gb.shape != b.shape else gb
    return ga, gb


def _swap(t):
    nd = t.ndim
    axes = list(range(nd))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return S.Transpose.apply(t, axes=tuple(axes))


# ---- elementwise functions --------------------------------------------------------------------
@rule(M.Exp)
def _exp(self, want, g):
    return g * output_t(self, 0, self.saved[0])


@rule(M.Log)
def _log(self, want, g):
    return g / input_t(self, 0, self.saved[0])


@rule(M.Log1p)
def _log1p(self, want, g):
    return g / (input_t(self, 0, self.saved[0]) + 1)


@rule(M.Expm1)
def _expm1(self, want, g):
    return g * (output_t(self, 0, self.saved[0]) + 1)


@rule(M.Tanh)
def _tanh(self, want, g):
    y = output_t(self, 0, self.saved[0])
    return g * (1 - y * y)


@rule(M.Sqrt)
def _sqrt(self, want, g):
    return g / (output_t(self, 0, self.saved[0]) * 2)


@rule(M.Sin)
def _sin(self, want, g):
    return g * M.Cos.apply(input_t(self, 0, self.saved[0]))


@rule(M.Cos)
def _cos(self, want, g):
    return -g * M.Sin.apply(input_t(self, 0, self.saved[0]))


@rule(M.Sigmoid)
def _sigmoid(self, want, g):
    y = output_t(self, 0, self.saved[0])
    return g * (y * (1 - y))


@rule(M.Abs)
def _abs(self, want, g):  # the sign is piecewise constant: no second-order term (as torch)
    (a,) = self.saved  # tied to the input with a zero derivative (torch's ``sgn(self)``)
    return tie_t(g * xp_of(a).sign(a).astype(a.dtype, copy=False), input_t(self, 0, a))


@rule(M.Relu)
def _relu(self, want, g):
    (out,) = self.saved  # tied to the output (torch's ``threshold_backward(grad, result)``)
    return tie_t(g * (out > 0).astype(out.dtype), output_t(self, 0, out))


@rule(M.Cast)
def _cast(self, want, g):
    return M.Cast.apply(g, dtype=self.src)


@rule(_Clone)
def _clone(self, want, g):
    return g


@rule(_ToDevice)
def _to_device(self, want, g):
    return _ToDevice.apply(g, device=self.src)


# ---- reductions -------------------------------------------------------------------------------
@rule(M.Sum)
def _sum(self, want, g):
    return expand_t(g, self.shape, self.axes, self.keepdims)


@rule(M.Mean)
def _mean(self, want, g):
    return expand_t(g * (1.0 / self.n if self.n else float("inf")), self.shape, self.axes,
                    self.keepdims)


@rule(M.Var)
def _var(self, want, g):
    """From the input, recomputed: the variance does not change when each group is shifted,
    so the saved centred values stand in for it (with its place in the graph)."""
    (centered,) = self.saved
    x = input_t(self, 0, centered)
    c = x - x.mean(self.axes, keepdims=True)
    return (expand_t(g, centered.shape, self.axes, self.keepdims) * c
            * (2.0 / self.denom if self.denom else float("inf")))


@rule(M.Cumsum)
def _cumsum(self, want, g):  # the running sum of g from the end
    rev = (slice(None),) * (self.axis % g.ndim) + (slice(None, None, -1),)
    return S.GetItem.apply(M.Cumsum.apply(S.GetItem.apply(g, index=rev), axis=self.axis),
                           index=rev)


@rule(M.Prod)
def _prod(self, want, g):
    """Each element's gradient is the product of the others along the axis (round 44: an
    ``hvp`` of a product refused): the row repeated n times with the diagonal set to 1,
    multiplied out by ``Prod`` itself, so zeros stay exact and any order differentiates."""
    if not want[0]:
        return (None,)
    (a,) = self.saved
    ax = self.axis % a.ndim
    n = a.shape[ax]
    xm = input_t(self, 0, a).movedim(ax, -1)  # (..., n)
    rows = xm.unsqueeze(-2).expand(*xm.shape[:-1], n, n)  # row i: every element
    others = M.Prod.apply(rows.masked_fill(np.eye(n, dtype=bool), 1.0), axis=-1)
    ge = g if self.keepdims else g.unsqueeze(ax)
    return (ge * others.movedim(-1, ax),)


class _TensorXp:
    """The few array functions ``TM._Unary.FNS``' derivatives call, on tensors: the same
    formulas then build differentiable graphs (each op has a rule, ``sinh``/``cosh`` this
    one again)."""

    exp = staticmethod(lambda t: t.exp())
    sqrt = staticmethod(lambda t: t.sqrt())
    sinh = staticmethod(lambda t: t.sinh())
    cosh = staticmethod(lambda t: t.cosh())


@rule(TM._Unary)
def _unary(self, want, g):
    """erf, asin, acos, atan, sinh, cosh, asinh, acosh, atanh (round 44: refused)."""
    (a,) = self.saved
    return (g * TM._Unary.FNS[self.kind][1](_TensorXp, input_t(self, 0, a)),)


@rule(R27._SpecialFn)
def _special_fn(self, want, g):
    """lgamma (digamma), digamma (trigamma), erfinv (round 44: refused)."""
    (s,) = self.saved
    if self.kind == "gammaln":
        return (g * R27._SpecialFn.apply(input_t(self, 0, s), kind="psi"),)
    if self.kind == "psi":
        return (g * R27._Polygamma.apply(input_t(self, 0, s), n=1),)
    # erfinv: sqrt(pi)/2 exp(erfinv(x)^2), from the saved output
    return (g * (np.sqrt(np.pi) / 2) * (output_t(self, 0, s) ** 2).exp(),)


@rule(R27._Polygamma)
def _polygamma(self, want, g):
    (a,) = self.saved
    return (g * R27._Polygamma.apply(input_t(self, 0, a), n=self.n + 1),)


@rule(M._Extreme)  # Max and Min
def _extreme(self, want, g):
    a, out = self.saved
    mask = a == out
    share = (mask / mask.sum(axis=self.axes, keepdims=True)).astype(a.dtype)
    return expand_t(g, a.shape, self.axes, self.keepdims) * share


# ---- shapes -----------------------------------------------------------------------------------
@rule(S.Reshape)
def _reshape(self, want, g):
    return S.Reshape.apply(g, shape=self.shape)


@rule(S.Transpose)
def _transpose(self, want, g):
    if self.axes is None:
        return S.Transpose.apply(g, axes=None)
    return S.Transpose.apply(g, axes=tuple(int(a) for a in np.argsort(self.axes)))


@rule(S.Expand)
def _expand(self, want, g):
    return unbroadcast_t(g, self.shape)


class IndexGrad(Function):
    """The backward of ``a[index]`` as a node: ``g`` put (added, for repeated integer indices)
    into zeros of ``a``'s shape; its own backward reads ``gg[index]`` back."""

    def forward(self, g, index=None, shape=None, advanced=False):
        self.index = index
        out = xp_of(g).zeros(shape, dtype=g.dtype)
        if advanced:
            scatter_add(out, index, g)
        else:
            out[index] = g
        return out

    def backward(self, gg):
        return gg[self.index]

    def backward_t(self, want, gg):
        return S.GetItem.apply(gg, index=self.index)


@rule(S.GetItem)
def _getitem(self, want, g):
    return IndexGrad.apply(g, index=self.index, shape=self.shape, advanced=self.advanced)


class GatherGrad(Function):
    """The backward of ``gather`` as a node (a scatter-add); its backward gathers again."""

    def forward(self, g, index=None, axis=0, shape=None):
        self.index, self.axis = index, axis
        xp = xp_of(g)
        full = list(xp.ogrid[tuple(slice(n) for n in index.shape)])
        full[axis] = index
        return scatter_add(xp.zeros(shape, dtype=g.dtype), tuple(full), g)

    def backward(self, gg):
        return xp_of(gg).take_along_axis(gg, self.index, axis=self.axis)

    def backward_t(self, want, gg):
        return S.Gather.apply(gg, index=self.index, axis=self.axis)


@rule(S.Gather)
def _gather(self, want, g):
    return GatherGrad.apply(g, index=self.index, axis=self.axis, shape=self.shape)


@rule(S.Cat)
def _cat(self, want, g):
    parts = S.Split.apply(g, sizes=self.sizes, axis=self.axis)
    parts = parts if isinstance(parts, tuple) else (parts,)
    return tuple(p if w else None for p, w in zip(parts, want))


@rule(S.Stack)
def _stack(self, want, g):
    ax = self.axis % g.ndim
    return tuple(S.GetItem.apply(g, index=(slice(None),) * ax + (i,)) if w else None
                 for i, w in enumerate(want))


@rule(S.Split)
def _split(self, want, *grads):
    return S.Cat.apply(*grads, axis=self.axis)


@rule(S.Where)
def _where(self, want, g):
    (cond,) = self.saved
    ga = unbroadcast_t(S.Where.apply(cond, g, 0.0), self.sa) if want[1] else None
    gb = unbroadcast_t(S.Where.apply(cond, 0.0, g), self.sb) if want[2] else None
    return None, ga, gb


@rule(S.MaskedFill)
def _masked_fill(self, want, g):
    (mask,) = self.saved
    return unbroadcast_t(S.MaskedFill.apply(g, mask, value=0.0), self.sa), None

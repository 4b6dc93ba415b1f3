"""What a double-backward rule (``backward_t``) builds its gradient from: the node's inputs and
outputs as tensors *in the graph* (so the gradient it returns can be differentiated again),
and the tensor forms of ``unbroadcast`` and of a reduction's expansion.

A node keeps no input tensors (see :mod:`.autograd`), only the arrays it saved and, per input,
the producing node and output index (or the leaf). :func:`input_t` joins the two back into a
tensor that stands where that input stood; :func:`output_t` is the node's own output, bound to
the node itself, so that a second backward through it runs the node's backward again (why a
``create_graph`` pass keeps every saved array).
"""

from __future__ import annotations

from .autograd import Function
from .ops_math import Sum
from .ops_shape import Expand, Reshape
from .tensor import Tensor

__all__ = ["input_t", "output_t", "unbroadcast_t", "expand_t", "tie_t"]


def input_t(node, i, array):
    """Input ``i`` of ``node`` as a tensor in the graph (its saved ``array`` as the value), or
    ``array`` itself when that input needs no gradient (a constant to the rule)."""
    p = node._parents[i] if i < len(node._parents) else None
    if p is None:
        return array
    if isinstance(p, Function):
        return Tensor._make(array, True, p, node._pidx[i])
    return p  # a leaf: the tensor itself


def output_t(node, i, array):
    """Output ``i`` of ``node`` (its saved ``array``) as a tensor made by ``node``."""
    return Tensor._make(array, True, node, i)


def unbroadcast_t(g, shape):
    """Sum the tensor ``g`` over the axes broadcasting added or stretched, back to ``shape``."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    nd = g.ndim - len(shape)
    if nd > 0:
        g = Sum.apply(g, axis=tuple(range(nd)))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if axes:
        g = Sum.apply(g, axis=axes, keepdims=True)
    return g if tuple(g.shape) == shape else Reshape.apply(g, shape=shape)


def expand_t(g, shape, axes, keepdims):
    """A reduced gradient tensor broadcast back to the input ``shape`` over ``axes``."""
    if not keepdims:
        kshape = tuple(1 if i in axes else s for i, s in enumerate(shape))
        if tuple(g.shape) != kshape:
            g = Reshape.apply(g, shape=kshape)
    if tuple(g.shape) == tuple(shape):
        return g
    return Expand.apply(g, shape=tuple(shape))


class _Tie(Function):
    """``t`` itself, tied to ``anchor`` with a zero derivative (round 46, h8): torch's
    backward formulas that read ``self`` or ``result`` (relu's ``threshold_backward``,
    ``hardtanh_backward``, ``abs``'s ``sgn``, ``pow``'s ``self.pow(p - 1)``) give a gradient
    that requires grad even where its derivative is zero, so a third ``grad`` returns zeros
    (a constant would raise). The zeros it passes back in a ``create_graph`` pass are
    constants, as torch's ``zeros_like``; a first-order backward passes none (a zero
    gradient flowing back through the whole network made a ReLU critic's gradient-penalty
    step 5-10% slower)."""

    def forward(self, t, anchor):
        self.shape, self.dtype = anchor.shape, anchor.dtype
        return t.copy()

    def backward(self, g):
        return g, None

    def backward_t(self, want, g):
        z = None
        if want[1]:
            z = Tensor._make(g.xp.zeros(self.shape, dtype=self.dtype), False, None, 0)
        return g, z


def tie_t(t, anchor):
    """``t`` in the graph through ``anchor`` (a tensor that requires grad) with a zero
    derivative; ``t`` unchanged when ``anchor`` is not in the graph."""
    if not isinstance(anchor, Tensor) or not anchor.requires_grad:
        return t
    return _Tie.apply(t, anchor)

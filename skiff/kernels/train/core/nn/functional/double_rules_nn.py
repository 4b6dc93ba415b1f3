"""Double-backward rules (``backward_t``, see :mod:`...double_rules`) of the nn ops: ``linear``,
``embedding``, ``conv2d``, ``max_pool2d``, ``avg_pool2d``, the pools' padding, ``dropout``,
``gelu`` (exact and tanh), ``silu``, ``softmax``, ``log_softmax``, ``layer_norm``, ``rms_norm``,
``batch_norm``, ``cross_entropy`` (weighted and label-smoothed too) and
``scaled_dot_product_attention``, each written with
differentiable tensor ops so the gradient it returns can be differentiated again.
"""

from __future__ import annotations

import math

from ...autograd import Function, xp_of
from ...double_helpers import input_t, output_t, tie_t, unbroadcast_t
from ...double_rules import IndexGrad, rule
from ...ops_math import Exp, MatMul, Sigmoid, Tanh
from ...ops_shape import Expand, GetItem, Reshape, Stack, Transpose
from .activations import (
    BatchNormFn,
    DropoutFn,
    GeluFn,
    LayerNormFn,
    LogSoftmaxFn,
    RMSNormFn,
    SiluFn,
    SoftmaxFn,
    _erf,
)
from .conv import AvgPool2dFn, Conv2dFn, MaxPool2dFn, _PadFn
from .dense import EmbeddingFn, LinearFn, SDPAFn
from .losses import CrossEntropyFn, WeightedCrossEntropyFn

__all__ = ["NormalCdf"]

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_K = math.sqrt(2.0 / math.pi)
_C = 0.044715


@rule(LinearFn)
def _linear(self, want, g):
    x, w = self.saved
    n_out, n_in = w.shape
    g2 = Reshape.apply(g, shape=(-1, n_out))
    gx = gw = gb = None
    if want[0]:
        gx = Reshape.apply(MatMul.apply(g2, input_t(self, 1, w)), shape=x.shape)
    if want[1]:
        x_t = input_t(self, 0, x)
        x2 = Reshape.apply(x_t, shape=(-1, n_in)) if hasattr(x_t, "_node") else x.reshape(-1, n_in)
        gw = MatMul.apply(Transpose.apply(g2, axes=None), x2)
    if want[2]:
        gb = g2.sum(0)
    return gx, gw, gb


def _pdf(x):
    """The standard normal density of the tensor ``x`` (differentiable to any order)."""
    return Exp.apply(x * x * -0.5) * _INV_SQRT_2PI


class NormalCdf(Function):
    """The standard normal distribution function Phi(x); its derivative is :func:`_pdf`."""

    def forward(self, x):
        self.save_for_backward(x)
        return 0.5 * (1 + _erf(x * (1 / _SQRT2)))

    def backward(self, g):
        (x,) = self.saved
        return g * (xp_of(x).exp(-0.5 * x * x) * _INV_SQRT_2PI)

    def backward_t(self, want, g):
        return g * _pdf(input_t(self, 0, self.saved[0]))


@rule(GeluFn)
def _gelu(self, want, g):
    x = input_t(self, 0, self.saved[0])
    if self.approximate == "tanh":  # 0.5 x (1 + tanh(u)), u = K (x + C x^3)
        t = Tanh.apply((x + x * x * x * _C) * _K)
        du = (x * x * (3 * _C) + 1) * _K
        return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * du)
    return g * (NormalCdf.apply(x) + x * _pdf(x))


@rule(SiluFn)
def _silu(self, want, g):
    x = input_t(self, 0, self.saved[0])
    s = Sigmoid.apply(x)
    return g * (s * (x * (1 - s) + 1))


@rule(SoftmaxFn)
def _softmax(self, want, g):
    p = output_t(self, 0, self.saved[0])
    return p * (g - (g * p).sum(self.axis, keepdims=True))


@rule(LogSoftmaxFn)
def _log_softmax(self, want, g):
    s = output_t(self, 0, self.saved[0])
    return g - Exp.apply(s) * g.sum(self.axis, keepdims=True)


class _Probs(SoftmaxFn):
    """The softmax over the last axis of logits whose probabilities ``p`` are already known
    (cross-entropy keeps them, not the logits): a softmax node that returns ``p``."""

    def forward(self, x, p=None):
        self.axis = -1
        self.save_for_backward(p)
        return p


@rule(CrossEntropyFn)
def _cross_entropy(self, want, g):
    p, t, valid = self.saved
    xp = xp_of(p)
    n, c = p.shape
    probs = _Probs.apply(input_t(self, 0, p.reshape(self.shape)), p=p.reshape(self.shape))
    onehot = xp.zeros((n, c), dtype=p.dtype)
    onehot[xp.arange(n), t] = 1
    if self.reduction == "none":
        scale = Reshape.apply(g, shape=(-1,)) * valid.astype(p.dtype)
    else:
        scale = g * (valid / self.count).astype(p.dtype)
    gx = (Reshape.apply(probs, shape=(n, c)) - onehot) * Reshape.apply(scale, shape=(n, 1))
    return Reshape.apply(gx, shape=self.shape), None


@rule(LayerNormFn)
def _layer_norm(self, want, g):
    """From the input, recomputed: layer norm does not change when a row is shifted, so the
    saved normalised rows over the reciprocal std stand in for it (with its place in the
    graph) and give the same statistics."""
    xhat, rstd, w = self.saved
    c = xhat.shape[-1]
    x = input_t(self, 0, (xhat / rstd).reshape(self.shape))
    x2 = Reshape.apply(x, shape=(-1, c)) if hasattr(x, "_node") else x.reshape(-1, c)
    xc = x2 - x2.mean(-1, keepdims=True)
    r = ((xc * xc).mean(-1, keepdims=True) + self.eps) ** -0.5
    xh = xc * r
    g2 = Reshape.apply(g, shape=(-1, c))
    gh = g2 * input_t(self, 1, w) if w is not None else g2
    gx = gw = gb = None
    if want[0]:
        gx = Reshape.apply(r * (gh - gh.mean(-1, keepdims=True)
                                - xh * (gh * xh).mean(-1, keepdims=True)), shape=self.shape)
    if want[1]:
        gw = (g2 * xh).sum(0)
    if want[2]:
        gb = g2.sum(0)
    return gx, gw, gb


@rule(Conv2dFn)
def _conv2d(self, want, g):
    """One kernel offset (i, j) at a time: the input's strided window at that offset is a
    slice of the padded input, so the weight gradient is a GEMM of ``g`` with each slice and
    the input gradient puts ``w[:, :, i, j]^T g`` back into each window (kh * kw small ops:
    meant for the small critics and PINNs that take gradients of gradients)."""
    xt, w = self.saved
    n, c, h, wd, kh, kw, sh, sw, ph, pw, ho, wo = self.geom
    cout = w.shape[0]
    hp, wp = h + 2 * ph, wd + 2 * pw
    g2 = Reshape.apply(Transpose.apply(g, axes=(1, 0, 2, 3)), shape=(cout, n * ho * wo))

    def window(i, j):
        return (slice(None), slice(None), slice(i, i + sh * (ho - 1) + 1, sh),
                slice(j, j + sw * (wo - 1) + 1, sw))

    gx = gw = gb = None
    if want[1]:
        x = input_t(self, 0, xt[:, :, ph:ph + h, pw:pw + wd].transpose(1, 0, 2, 3))
        xpad = IndexGrad.apply(x, index=(slice(None), slice(None), slice(ph, ph + h),
                                         slice(pw, pw + wd)), shape=(n, c, hp, wp))
        parts = []
        for i in range(kh):
            for j in range(kw):
                cols = Reshape.apply(Transpose.apply(GetItem.apply(xpad, index=window(i, j)),
                                                     axes=(1, 0, 2, 3)), shape=(c, n * ho * wo))
                parts.append(MatMul.apply(g2, Transpose.apply(cols, axes=None)))
        gw = Transpose.apply(Reshape.apply(Stack.apply(*parts, axis=0),
                                           shape=(kh, kw, cout, c)), axes=(2, 3, 0, 1))
    if want[0]:
        w_t = input_t(self, 1, w)
        total = None
        for i in range(kh):
            for j in range(kw):
                wij = GetItem.apply(w_t, index=(slice(None), slice(None), i, j)) \
                    if hasattr(w_t, "_node") else w[:, :, i, j]
                part = MatMul.apply(Transpose.apply(wij, axes=None), g2)  # (c, n*ho*wo)
                part = Transpose.apply(Reshape.apply(part, shape=(c, n, ho, wo)),
                                       axes=(1, 0, 2, 3))
                part = IndexGrad.apply(part, index=window(i, j), shape=(n, c, hp, wp))
                total = part if total is None else total + part
        gx = GetItem.apply(total, index=(slice(None), slice(None), slice(ph, ph + h),
                                         slice(pw, pw + wd)))
    if want[2]:
        gb = g2.sum(1)
    return gx, gw, gb


@rule(EmbeddingFn)
def _embedding(self, want, g):  # the rows of g added back at their indices
    (idx,) = self.saved
    return IndexGrad.apply(g, index=idx, shape=self.wshape, advanced=True), None


@rule(RMSNormFn)
def _rms_norm(self, want, g):
    xhat, rstd, w = self.saved
    x = input_t(self, 0, xhat / rstd)
    r = ((x * x).mean(-1, keepdims=True) + self.eps) ** -0.5
    xh = x * r
    gx = gw = None
    if want[1]:
        gw = (g * xh).sum(tuple(range(g.ndim - 1)))
    if want[0]:
        gh = g * input_t(self, 1, w) if w is not None else g
        gx = r * (gh - xh * (gh * xh).mean(-1, keepdims=True))
    return gx, gw


@rule(BatchNormFn)
def _batch_norm(self, want, g):
    """From the input, recomputed in (N, C, rest) order: in training the statistics do not
    change when a channel is shifted, so the saved normalised values over 1/std stand in for the
    input; in eval the map is affine and they give the same normalised values."""
    xhat, rstd, w = self.saved
    n, c = self.shape[:2]
    x = input_t(self, 0, self._out(xhat / rstd))
    x3 = Reshape.apply(x, shape=(n, c, -1)) if hasattr(x, "_node") else x.reshape(n, c, -1)
    g3 = Reshape.apply(g, shape=(n, c, -1))
    if self.training:
        xc = x3 - x3.mean((0, 2), keepdims=True)
        r = ((xc * xc).mean((0, 2), keepdims=True) + self.eps) ** -0.5
        xh = xc * r
    else:
        r = rstd.reshape(1, c, 1)
        xh = x3 * r
    gx = gw = gb = None
    if want[1]:
        gw = (g3 * xh).sum((0, 2))
    if want[2]:
        gb = g3.sum((0, 2))
    if want[0]:
        gh = g3 * Reshape.apply(input_t(self, 1, w), shape=(1, c, 1)) if w is not None and \
            self._parents[1] is not None else g3 * (w.reshape(1, c, 1) if w is not None else 1.0)
        if self.training:
            gh = gh - gh.mean((0, 2), keepdims=True) - xh * (gh * xh).mean((0, 2), keepdims=True)
        gx = Reshape.apply(r * gh, shape=self.shape)
    return gx, gw, gb, None, None


@rule(MaxPool2dFn)
def _max_pool2d(self, want, g):
    """The gradient goes to the position of each window's max: an integer index built from the
    saved offsets, so the gradient is an index-add node (and its own gradient a gather)."""
    (arg,) = self.saved
    kh, kw, sh, sw, ho, wo = self.geom
    n, c, h, w = self.shape
    xp = xp_of(arg)
    a = arg.transpose(1, 0, 2, 3) if self.swap else arg
    a = a.astype(xp.int64)
    rows = xp.arange(ho).reshape(1, 1, ho, 1) * sh + a // kw
    cols = xp.arange(wo).reshape(1, 1, 1, wo) * sw + a % kw
    index = (xp.arange(n).reshape(n, 1, 1, 1), xp.arange(c).reshape(1, c, 1, 1), rows, cols)
    return _tied(self, IndexGrad.apply(g, index=index, shape=(n, c, h, w), advanced=True))


def _tied(node, gx):
    """``gx`` tied to the node's input with a zero derivative (round 47): torch's
    ``max_pool2d_with_indices_backward``/``avg_pool2d_backward`` read ``self``, so the
    gradient requires grad (its own derivative zeros) where skiff's was a constant."""
    anchor = gx.xp.broadcast_to(gx.xp.zeros((), dtype=gx.dtype), tuple(node.shape))
    return tie_t(gx, input_t(node, 0, anchor))


@rule(AvgPool2dFn)
def _avg_pool2d(self, want, g):  # g / (kh kw) added back into each window
    kh, kw, sh, sw, ho, wo = self.geom
    n, c, h, w = self.shape
    gs = g * (1.0 / (kh * kw))
    total = None
    for i in range(kh):
        for j in range(kw):
            index = (slice(None), slice(None), slice(i, i + sh * (ho - 1) + 1, sh),
                     slice(j, j + sw * (wo - 1) + 1, sw))
            part = IndexGrad.apply(gs, index=index, shape=(n, c, h, w))
            total = part if total is None else total + part
    return _tied(self, total)


@rule(_PadFn)
def _pad(self, want, g):
    h, w = g.shape[2] - 2 * self.ph, g.shape[3] - 2 * self.pw
    return GetItem.apply(g, index=(slice(None), slice(None), slice(self.ph, self.ph + h),
                                   slice(self.pw, self.pw + w)))


@rule(DropoutFn)
def _dropout(self, want, g):  # the same mask and scale: linear in g
    (mask,) = self.saved
    return g * (mask * g.dtype.type(self.scale)).astype(g.dtype), None


def _swap_last(t):
    axes = list(range(t.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return Transpose.apply(t, axes=tuple(axes))


@rule(SDPAFn)
def _sdpa(self, want, g):
    """The probabilities as a softmax node over the scores q k^T * scale (its value the saved
    probabilities, where the mask already sits; the mask is a constant), then attention's
    gradient with differentiable GEMMs."""
    q, k, v, p, _ = self.saved
    q_t, k_t, v_t = (input_t(self, i, a) for i, a in enumerate((q, k, v)))
    scores = MatMul.apply(q_t * self.scale, _swap_last(k_t))
    if tuple(scores.shape) != p.shape:  # a broadcast mask widened the batch axes
        scores = Expand.apply(scores, shape=p.shape)
    probs = _Probs.apply(scores, p=p)
    gq = gk = gv = None
    if want[2]:
        gv = unbroadcast_t(MatMul.apply(_swap_last(probs), g), v.shape)
    if want[0] or want[1]:
        gp = MatMul.apply(g, _swap_last(v_t))
        gs = probs * (gp - (gp * probs).sum(-1, keepdims=True))
        if want[0]:
            gq = unbroadcast_t(MatMul.apply(gs, k_t) * self.scale, q.shape)
        if want[1]:
            gk = unbroadcast_t(MatMul.apply(_swap_last(gs), q_t) * self.scale, k.shape)
    return gq, gk, gv


@rule(WeightedCrossEntropyFn)
def _weighted_cross_entropy(self, want, g):  # p * sum(q) - q, with p a softmax node
    logp, q = self.saved
    xp = xp_of(logp)
    n, c = logp.shape
    p = xp.exp(logp)
    probs = Reshape.apply(_Probs.apply(input_t(self, 0, p.reshape(self.shape)),
                                       p=p.reshape(self.shape)), shape=(n, c))
    if self.reduction == "none":
        scale = Reshape.apply(g, shape=(n, 1))
    else:
        scale = g * (1.0 / self.count).astype(logp.dtype)
    gx = (probs * q.sum(axis=1, keepdims=True) - q) * scale
    return Reshape.apply(gx, shape=self.shape), None

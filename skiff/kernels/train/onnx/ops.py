"""The autograd nodes ONNX graphs need beyond skiff's core: erf, clip, hard sigmoid, padding
with a value (asymmetric, for ``SAME_UPPER`` pools and convolutions) and grouped convolution.

Each node keeps what its backward reads and nothing else:

| node | keeps |
|---|---|
| :class:`ErfFn` | the input |
| :class:`ClipFn`, :class:`HardSigmoidFn` | the boolean mask of the linear region |
| :class:`AffineHardSwishFn` | the pre-activation ``a * x + b`` |
| :class:`GeluErfFn` | the input |
| :class:`Pad2dFn` | the pads (shapes only) |
| :class:`DepthwiseConv2dFn` | the padded, channels-first input and the weight |
| :class:`LinearFn` | the input and the weight |

Depthwise convolution (one input channel per group, as MobileNet-style PP-OCR backbones use
it) is ``kh * kw`` strided multiply-adds over the padded, channels-first input, both ways;
no im2col. Other
group counts run one GEMM convolution (core ``conv2d``) per group and concatenate.
:func:`grouped_conv2d_reference` is the plain twin the tests compare against.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.autograd import Function, xp_of
from ..core.nn.functional import conv2d
from ..core.tensor import Tensor, cat
from .activations import affine_hswish_bwd, affine_hswish_fwd, gelu_erf_bwd, gelu_erf_fwd
from .depthwise import depthwise_bwd, depthwise_fwd

__all__ = ["ErfFn", "ClipFn", "HardSigmoidFn", "AffineHardSwishFn", "GeluErfFn", "Pad2dFn",
           "DepthwiseConv2dFn", "erf", "clip", "hard_sigmoid", "affine_hard_swish", "gelu_erf",
           "pad2d", "grouped_conv2d", "grouped_conv2d_reference", "LinearFn", "linear"]


def _erf(x):
    if isinstance(x, np.ndarray):
        from scipy.special import erf as f
    else:  # cupy
        from cupyx.scipy.special import erf as f
    return f(x).astype(x.dtype, copy=False)


class ErfFn(Function):
    def forward(self, x):
        self.save_for_backward(x)
        return _erf(x)

    def backward(self, g):
        (x,) = self.saved
        xp = xp_of(x)
        return g * (2.0 / math.sqrt(math.pi)) * xp.exp(-(x * x))


class ClipFn(Function):
    """``min(max(x, lo), hi)``; the gradient passes where ``lo < x < hi``."""

    def forward(self, x, lo=None, hi=None):
        xp = xp_of(x)
        out = x
        mask = xp.ones(x.shape, dtype=bool)
        if lo is not None:
            mask &= x > lo
            out = xp.maximum(out, x.dtype.type(lo))
        if hi is not None:
            mask &= x < hi
            out = xp.minimum(out, x.dtype.type(hi))
        self.save_for_backward(mask)
        return out if out is not x else x.copy()

    def backward(self, g):
        (mask,) = self.saved
        return g * mask


class HardSigmoidFn(Function):
    """``clip(alpha * x + beta, 0, 1)``."""

    def forward(self, x, alpha=0.2, beta=0.5):
        xp = xp_of(x)
        y = x * x.dtype.type(alpha) + x.dtype.type(beta)
        self.save_for_backward((y > 0) & (y < 1))
        self.alpha = alpha
        return xp.clip(y, 0, 1)

    def backward(self, g):
        (mask,) = self.saved
        return g * mask * g.dtype.type(self.alpha)


class AffineHardSwishFn(Function):
    """``c * hard_swish(a * x + b) + d`` in one node, with scalar a, b, c, d: PP-OCRv4 writes
    each activation as eight elementwise ops (its learnable-affine hard swish), each a pass
    over memory and a saved array; here one node, one saved array (``z``), and one numba
    pass each way (custom ops ``onnx.affine_hswish_fwd/bwd``)."""

    def forward(self, x, a=1.0, b=0.0, c=1.0, d=0.0):
        y, z = affine_hswish_fwd(x, a, b, c, d)
        self.save_for_backward(z)
        self.scale = a * c
        return y

    def backward(self, g):
        (z,) = self.saved
        return affine_hswish_bwd(g, z, self.scale)


class GeluErfFn(Function):
    """Exact GELU, the five-node erf form PP-OCRv6's exporter writes; keeps the input."""

    def forward(self, x):
        self.save_for_backward(x)
        return gelu_erf_fwd(x)

    def backward(self, g):
        (x,) = self.saved
        return gelu_erf_bwd(g, x)


class LinearFn(Function):
    """``x @ w + b`` for x (..., K), w (K, M), b (M,): ``MatMul`` and the bias ``Add`` that
    follows it in the file, as one node (the bias is added in place into the GEMM's result
    instead of a second full-size array: the recognizer's last layer writes N*T x classes)."""

    def forward(self, x, w, b):
        k, m = w.shape
        self.shape = x.shape
        x2 = x.reshape(-1, k)
        self.save_for_backward(x2, w)
        y = x2 @ w
        y += b
        return y.reshape(x.shape[:-1] + (m,))

    def backward(self, g):
        x2, w = self.saved
        xp = xp_of(g)
        nx, nw, nb = self.needs_input_grad
        g2 = g.reshape(-1, w.shape[1])
        gx = (g2 @ w.T).reshape(self.shape) if nx else None
        gw = x2.T @ g2 if nw else None
        gb = xp.ones(g2.shape[0], dtype=g2.dtype) @ g2 if nb else None
        return gx, gw, gb


class Pad2dFn(Function):
    """Pad the last two axes by ``(top, left, bottom, right)`` with ``value``."""

    def forward(self, x, pads=(0, 0, 0, 0), value=0.0):
        xp = xp_of(x)
        t, left, b, r = pads
        self.pads, self.shape = pads, x.shape
        out = xp.full(x.shape[:-2] + (x.shape[-2] + t + b, x.shape[-1] + left + r), value,
                      dtype=x.dtype)
        out[..., t : t + x.shape[-2], left : left + x.shape[-1]] = x
        return out

    def backward(self, g):
        t, left, _, _ = self.pads
        h, w = self.shape[-2:]
        return g[..., t : t + h, left : left + w]


class DepthwiseConv2dFn(Function):
    """Depthwise convolution: x (N, C, H, W), w (C, 1, kh, kw), optional bias (C,).

    Channels first inside, like core ``conv2d``: the input is transposed and padded once to
    (C, N, Hp, Wp) (free when it is a conv output, which is a channels-first view), each
    kernel offset is one strided multiply-add over whole (C, N) planes (custom ops
    ``train.depthwise_conv_fwd/bwd``, one numba pass on the CPU), and the output is handed out as
    an (N, C, Ho, Wo) view of (C, N, Ho, Wo) memory. Keeps the padded input and the weight.
    """

    def forward(self, x, w, b=None, stride=(1, 1), pads=(0, 0, 0, 0)):
        xp = xp_of(x)
        n, c, h, wd = x.shape
        kh, kw = w.shape[-2:]
        (sh, sw), (pt, pl, pb, pr) = stride, pads
        hp, wp = h + pt + pb, wd + pl + pr
        ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
        xt = xp.zeros((c, n, hp, wp), dtype=x.dtype)
        xt[:, :, pt : pt + h, pl : pl + wd] = x.transpose(1, 0, 2, 3)
        self.geom = (n, c, h, wd, kh, kw, sh, sw, pt, pl, ho, wo)
        self.save_for_backward(xt, w)
        out = depthwise_fwd(xt, w.reshape(c, kh, kw), sh, sw, ho, wo)
        if b is not None:
            out += b.reshape(c, 1, 1, 1)
        return out.transpose(1, 0, 2, 3)

    def backward(self, g):
        xt, w = self.saved
        xp = xp_of(xt)
        n, c, h, wd, kh, kw, sh, sw, pt, pl, ho, wo = self.geom
        nx, nw, nb = self.needs_input_grad
        gt = xp.ascontiguousarray(g.transpose(1, 0, 2, 3))  # (C, N, Ho, Wo); a view usually
        gb = gt.reshape(c, -1).sum(axis=1) if nb else None
        gpad, gw = depthwise_bwd(gt, xt, w.reshape(c, kh, kw), sh, sw, nx, nw)
        gx = gpad[:, :, pt : pt + h, pl : pl + wd].transpose(1, 0, 2, 3) if nx else None
        gw = gw.reshape(w.shape) if nw else None
        return gx, gw, gb


def erf(x: Tensor) -> Tensor:
    return ErfFn.apply(x)


def clip(x: Tensor, lo=None, hi=None) -> Tensor:
    return ClipFn.apply(x, lo=None if lo is None else float(lo),
                        hi=None if hi is None else float(hi))


def hard_sigmoid(x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    return HardSigmoidFn.apply(x, alpha=float(alpha), beta=float(beta))


def gelu_erf(x: Tensor) -> Tensor:
    return GeluErfFn.apply(x)


def affine_hard_swish(x: Tensor, a=1.0, b=0.0, c=1.0, d=0.0) -> Tensor:
    return AffineHardSwishFn.apply(x, a=float(a), b=float(b), c=float(c), d=float(d))


def linear(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    return LinearFn.apply(x, w, b)


def pad2d(x: Tensor, pads, value: float = 0.0) -> Tensor:
    """``pads`` = (top, left, bottom, right), ONNX's begin-then-end order for 2-D."""
    pads = tuple(int(p) for p in pads)
    if not any(pads):
        return x
    return Pad2dFn.apply(x, pads=pads, value=float(value))


def grouped_conv2d(x: Tensor, w: Tensor, b=None, *, stride=(1, 1), pads=(0, 0, 0, 0),
                   groups: int = 1) -> Tensor:
    """ONNX ``Conv``: NCHW input, (Cout, Cin/groups, kh, kw) weight, pads (t, l, b, r)."""
    c = x.shape[1]
    if c % groups or w.shape[0] % groups or w.shape[1] * groups != c:
        raise ValueError(f"grouped_conv2d: input of {c} channels, weight of shape "
                         f"{tuple(w.shape)} and groups={groups} do not fit together")
    t, left, bt, r = pads
    if b is not None and b.ndim != 1:
        b = b.reshape((-1,))  # a (1, C, 1, 1) bias folded in from a following Add
    if groups == 1:
        if t == bt and left == r:
            return conv2d(x, w, b, stride=stride, padding=(t, left))
        return conv2d(pad2d(x, pads), w, b, stride=stride)
    if groups == c and w.shape[0] == c:
        return DepthwiseConv2dFn.apply(x, w, b, stride=tuple(stride), pads=tuple(pads))
    xpad = pad2d(x, pads)
    cin, cout = c // groups, w.shape[0] // groups
    y = cat([conv2d(xpad[:, k * cin : (k + 1) * cin], w[k * cout : (k + 1) * cout], None,
                    stride=stride) for k in range(groups)], axis=1)
    return y if b is None else y + b.reshape((1, -1, 1, 1))


def grouped_conv2d_reference(x: np.ndarray, w: np.ndarray, b=None, *, stride=(1, 1),
                             pads=(0, 0, 0, 0), groups: int = 1) -> np.ndarray:
    """The plain twin: a float64 loop over groups and kernel offsets with einsum."""
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pads[0], pads[2]),
                                            (pads[1], pads[3])))
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    cout, cin, kh, kw = w.shape
    sh, sw = stride
    ho, wo = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, cout, ho, wo))
    per = cout // groups
    for gi in range(groups):
        xs = x[:, gi * cin : (gi + 1) * cin]
        ws = w[gi * per : (gi + 1) * per]
        for i in range(kh):
            for j in range(kw):
                win = xs[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
                out[:, gi * per : (gi + 1) * per] += np.einsum("nchw,oc->nohw", win, ws[:, :, i, j])
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return out

"""The autograd nodes ONNX graphs need beyond skiff's core: erf, clip, hard sigmoid, padding
with a value (asymmetric, for ``SAME_UPPER`` pools and convolutions) and grouped convolution.

Each node keeps what its backward reads and nothing else:

| node | keeps |
|---|---|
| :class:`ErfFn` | the input |
| :class:`ClipFn`, :class:`HardSigmoidFn` | the boolean mask of the linear region |
| :class:`Pad2dFn` | the pads (shapes only) |
| :class:`DepthwiseConv2dFn` | the padded input and the weight |

Depthwise convolution (one input channel per group, as MobileNet-style PP-OCR backbones use
it) is ``kh * kw`` strided multiply-adds over the padded input, both ways; no im2col. Other
group counts run one GEMM convolution (core ``conv2d``) per group and concatenate.
:func:`grouped_conv2d_reference` is the plain twin the tests compare against.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.autograd import Function, xp_of
from ..core.nn.functional import conv2d
from ..core.tensor import Tensor, cat

__all__ = ["ErfFn", "ClipFn", "HardSigmoidFn", "Pad2dFn", "DepthwiseConv2dFn", "erf", "clip",
           "hard_sigmoid", "pad2d", "grouped_conv2d", "grouped_conv2d_reference"]


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
    """Depthwise convolution: x (N, C, H, W), w (C, 1, kh, kw), already padded input."""

    def forward(self, x, w, stride=(1, 1)):
        xp = xp_of(x)
        n, c, h, wd = x.shape
        _, _, kh, kw = w.shape
        sh, sw = stride
        ho, wo = (h - kh) // sh + 1, (wd - kw) // sw + 1
        self.geom = (kh, kw, sh, sw, ho, wo)
        self.save_for_backward(x, w)
        out = xp.zeros((n, c, ho, wo), dtype=x.dtype)
        wk = w.reshape(c, kh, kw)
        tmp = xp.empty_like(out)
        for i in range(kh):
            for j in range(kw):
                win = x[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
                xp.multiply(win, wk[None, :, i, j, None, None], out=tmp)
                out += tmp
        return out

    def backward(self, g):
        x, w = self.saved
        xp = xp_of(x)
        kh, kw, sh, sw, ho, wo = self.geom
        c = w.shape[0]
        wk = w.reshape(c, kh, kw)
        nx, nw = self.needs_input_grad
        gx = xp.zeros_like(x) if nx else None
        gw = xp.empty((c, kh, kw), dtype=x.dtype) if nw else None
        gt = xp.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(c, -1) if nw else None
        for i in range(kh):
            for j in range(kw):
                win = x[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
                if nw:  # per channel: sum over (n, ho, wo) of g * window, as a batched dot
                    wt = win.transpose(1, 0, 2, 3).reshape(c, -1)
                    gw[:, i, j] = xp.einsum("cm,cm->c", gt, wt)
                if nx:
                    gx[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw] += \
                        g * wk[None, :, i, j, None, None]
        return gx, (gw.reshape(w.shape) if nw else None)


def erf(x: Tensor) -> Tensor:
    return ErfFn.apply(x)


def clip(x: Tensor, lo=None, hi=None) -> Tensor:
    return ClipFn.apply(x, lo=None if lo is None else float(lo),
                        hi=None if hi is None else float(hi))


def hard_sigmoid(x: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    return HardSigmoidFn.apply(x, alpha=float(alpha), beta=float(beta))


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
    if groups == 1:
        if t == bt and left == r:
            y = conv2d(x, w, None, stride=stride, padding=(t, left))
        else:
            y = conv2d(pad2d(x, pads), w, None, stride=stride)
    elif groups == c and w.shape[0] == c:
        y = DepthwiseConv2dFn.apply(pad2d(x, pads), w, stride=tuple(stride))
    else:
        xpad = pad2d(x, pads)
        cin, cout = c // groups, w.shape[0] // groups
        y = cat([conv2d(xpad[:, k * cin : (k + 1) * cin], w[k * cout : (k + 1) * cout], None,
                        stride=stride) for k in range(groups)], axis=1)
    if b is not None:
        y = y + b.reshape((1, -1, 1, 1))
    return y


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

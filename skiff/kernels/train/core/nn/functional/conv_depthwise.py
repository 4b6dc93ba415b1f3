"""Depthwise ``conv2d`` (``groups == in_channels``, ``out_channels = k * in_channels``) as one
autograd node, instead of ``in_channels`` one-channel GEMM convolutions concatenated.

The input is transposed and padded once to channels-first (C, N, Hp, Wp) (:func:`.conv._padded_cn`:
free for a conv output without padding), each output channel ``o`` reads input channel
``o // k`` (torch's order; a multiplier ``k > 1`` repeats the input's channels), and the work
is the custom ops ``onnx.depthwise_fwd`` / ``onnx.depthwise_bwd`` of
:mod:`skiff.kernels.train.onnx.depthwise`: a numba pass that keeps each (c, n) plane in cache,
with a plain strided-pass reference twin (what runs on a GPU, in another dtype or without
numba). The output is an (N, C, Ho, Wo) view of channels-first memory, like ``Conv2dFn``'s.

Round 33 (docs/convolution.md): a depthwise 3x3 layer over 128 channels at 56x56, batch 8,
forward + backward took 229 ms against torch's 14 ms through the per-group loop.
"""

from __future__ import annotations

from ...autograd import Function, xp_of
from .conv import _padded_cn

__all__ = ["DepthwiseConv2dFn", "depthwise_conv2d"]


def _ops():
    from skiff.kernels.train.onnx.depthwise import depthwise_bwd, depthwise_fwd

    return depthwise_fwd, depthwise_bwd


class DepthwiseConv2dFn(Function):
    """x (N, C, H, W), w (C * k, 1, kh, kw), optional bias (C * k,); symmetric padding."""

    def forward(self, x, w, b=None, stride=(1, 1), padding=(0, 0)):
        xp = xp_of(x)
        fwd, _ = _ops()
        n, c, h, wd = x.shape
        co, _, kh, kw = w.shape
        mult = co // c
        (sh, sw), (ph, pw) = stride, padding
        ho = (h + 2 * ph - kh) // sh + 1
        wo = (wd + 2 * pw - kw) // sw + 1
        xt = _padded_cn(x, ph, pw)
        if mult > 1:
            xt = xp.repeat(xt, mult, axis=0)
        if not xt.flags.c_contiguous:
            xt = xp.ascontiguousarray(xt)
        self.geom = (n, c, h, wd, kh, kw, sh, sw, ph, pw, mult)
        self.save_for_backward(xt, w)
        out = fwd(xt, w.reshape(co, kh, kw), sh, sw, ho, wo)
        if b is not None:
            out += b.reshape(co, 1, 1, 1)
        return out.transpose(1, 0, 2, 3)

    def backward(self, g):
        xt, w = self.saved
        xp = xp_of(xt)
        _, bwd = _ops()
        n, c, h, wd, kh, kw, sh, sw, ph, pw, mult = self.geom
        co = w.shape[0]
        nx, nw, nb = self.needs_input_grad
        gt = xp.ascontiguousarray(g.transpose(1, 0, 2, 3))  # (Co, N, Ho, Wo); free usually
        gb = gt.reshape(co, -1).sum(axis=1) if nb else None
        gpad, gw = bwd(gt, xt, w.reshape(co, kh, kw), sh, sw, bool(nx), bool(nw))
        gx = None
        if nx:
            if mult > 1:
                gpad = gpad.reshape((c, mult) + gpad.shape[1:]).sum(axis=1)
            gx = gpad[:, :, ph : ph + h, pw : pw + wd].transpose(1, 0, 2, 3)
        return gx, (gw.reshape(w.shape) if nw else None), gb


def depthwise_conv2d(x, weight, bias, stride, padding):
    """The node for ``conv2d(groups=x.shape[1])`` once ``padding`` is a pair of ints."""
    return DepthwiseConv2dFn.apply(x, weight, bias, stride=tuple(stride),
                                   padding=tuple(padding))

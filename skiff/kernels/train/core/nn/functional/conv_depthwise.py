"""Depthwise ``conv2d`` (``groups == in_channels``, ``out_channels = k * in_channels``) as one
autograd node, instead of ``in_channels`` one-channel GEMM convolutions concatenated.

The input is transposed and padded once to channels-first (C, N, Hp, Wp) (:func:`.conv._padded_cn`:
free for a conv output without padding), each output channel ``o`` reads input channel
``o // k`` (torch's order; a multiplier ``k > 1`` repeats the input's channels), and the work
is the custom ops ``train.depthwise_conv_fwd`` / ``train.depthwise_conv_bwd`` below: a numba
pass that keeps each (c, n) plane in cache, with a plain strided-pass reference twin (what runs
on a GPU, in another dtype or without numba). The imported-graph path
(:mod:`skiff.kernels.train.onnx.depthwise`) uses these same ops (the ONNX package depends on
the core; it kept its own copy until round 33). The output is an
(N, C, Ho, Wo) view of channels-first memory, like ``Conv2dFn``'s.

Round 33 (docs/convolution.md): a depthwise 3x3 layer over 128 channels at 56x56, batch 8,
forward + backward took 229 ms against torch's 14 ms through the per-group loop.
"""

from __future__ import annotations

import functools

import numpy as np

from skiff.kernels.backend import custom_op, numba_available
from skiff.kernels.backend.split import split_rows

from ...autograd import Function, xp_of
from .conv import _padded_cn

__all__ = ["DepthwiseConv2dFn", "depthwise_conv2d", "depthwise_conv_fwd", "depthwise_conv_bwd"]


@custom_op("train.depthwise_conv_fwd")
def depthwise_conv_fwd(xt, w, sh, sw, ho, wo):
    """``xt`` the padded channels-first input (C, N, Hp, Wp), ``w`` (C, kh, kw) -> (C, N, ho,
    wo); the reference makes kh*kw strided multiply-add passes over the whole output."""
    xp = xp_of(xt)
    c, n = xt.shape[:2]
    kh, kw = w.shape[1:]
    out = xp.empty((c, n, ho, wo), dtype=xt.dtype)
    tmp = xp.empty_like(out)
    for i in range(kh):
        for j in range(kw):
            win = xt[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
            wij = w[:, i, j, None, None, None]
            if i == j == 0:
                xp.multiply(win, wij, out=out)
            else:
                xp.multiply(win, wij, out=tmp)
                out += tmp
    return out


@custom_op("train.depthwise_conv_bwd")
def depthwise_conv_bwd(gt, xt, w, sh, sw, need_x, need_w):
    """(the padded input's gradient or None, the (C, kh, kw) weight gradient or None)."""
    xp = xp_of(xt)
    c, n, ho, wo = gt.shape
    kh, kw = w.shape[1:]
    gpad = xp.zeros_like(xt) if need_x else None
    gw = xp.empty((c, kh, kw), dtype=xt.dtype) if need_w else None
    tmp = xp.empty_like(gt) if need_w else None
    for i in range(kh):
        for j in range(kw):
            if need_w:
                win = xt[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
                xp.multiply(gt, win, out=tmp)
                gw[:, i, j] = tmp.reshape(c, -1).sum(axis=1)
            if need_x:
                gpad[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw] += \
                    gt * w[:, i, j, None, None, None]
    return gpad, gw


@functools.lru_cache(maxsize=1)
def _kernels():
    import numba

    # Round 34: each (c, n) plane is read as one flat run. With stride (sh, sw) the padded
    # plane is first split into sh * sw phases ``P[a, b, r, x] = plane[r sh + a, x sw + b]``
    # of (hq, wq) = (ceil(Hp / sh), ceil(Wp / sw)) (for stride 1 the plane itself), so tap
    # (i, j) of output (y, x) is ``P[i % sh, j % sw].flat[(y + i // sh) wq + x + j // sw]``:
    # every tap is one contiguous multiply-add over ``(ho - 1) wq + wo`` outputs laid out
    # wq apart (the wq - wo columns between rows are computed and dropped). Row-by-row loops
    # of wo (14 at a stride-2 28x28 layer) ran at a fifth of the vector speed.
    global _split

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def _split(plane, sh, sw, ph):  # pragma: no cover - compiled
        hp, wp = plane.shape
        for a in range(sh):
            for r in range((hp - a + sh - 1) // sh):
                row = plane[r * sh + a]
                for b in range(sw):
                    prow = ph[a, b, r]
                    for x in range((wp - b + sw - 1) // sw):
                        prow[x] = row[x * sw + b]

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def fwd(xt, w, sh, sw, out):  # pragma: no cover - compiled
        c_, n_, ho, wo = out.shape
        kh, kw = w.shape[1], w.shape[2]
        hp, wp = xt.shape[2], xt.shape[3]
        hq, wq = (hp + sh - 1) // sh, (wp + sw - 1) // sw
        strided = sh > 1 or sw > 1
        ph = np.zeros((sh, sw, hq, wq), dtype=xt.dtype)
        span = (ho - 1) * wq + wo
        acc = np.empty(ho * wq, dtype=xt.dtype)
        for c in range(c_):
            for n in range(n_):
                if strided:
                    _split(xt[c, n], sh, sw, ph)
                acc[:] = 0
                for i in range(kh):
                    for j in range(kw):
                        src = ph[i % sh, j % sw].reshape(-1) if strided else \
                            xt[c, n].reshape(-1)
                        off = (i // sh) * wq + j // sw
                        wv = w[c, i, j]
                        s_ = src[off:off + span]  # slices: the loop vectorizes (no
                        for t in range(span):  # wrap-around check on off + t)
                            acc[t] += wv * s_[t]
                for y in range(ho):
                    orow = out[c, n, y]
                    for x in range(wo):
                        orow[x] = acc[y * wq + x]

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def bwd_w(gt, xt, sh, sw, gw):  # pragma: no cover - compiled
        c_, n_, ho, wo = gt.shape
        kh, kw = gw.shape[1], gw.shape[2]
        hp, wp = xt.shape[2], xt.shape[3]
        hq, wq = (hp + sh - 1) // sh, (wp + sw - 1) // sw
        strided = sh > 1 or sw > 1
        ph = np.zeros((sh, sw, hq, wq), dtype=xt.dtype)
        span = (ho - 1) * wq + wo
        gf = np.zeros(ho * wq, dtype=gt.dtype)  # the gradient wq apart, zeros between rows
        for c in range(c_):
            for i in range(kh):
                for j in range(kw):
                    gw[c, i, j] = 0.0
            for n in range(n_):
                if strided:
                    _split(xt[c, n], sh, sw, ph)
                for y in range(ho):
                    grow = gt[c, n, y]
                    for x in range(wo):
                        gf[y * wq + x] = grow[x]
                for i in range(kh):
                    for j in range(kw):
                        src = ph[i % sh, j % sw].reshape(-1) if strided else \
                            xt[c, n].reshape(-1)
                        off = (i // sh) * wq + j // sw
                        a = 0.0
                        s_ = src[off:off + span]
                        for t in range(span):
                            a += gf[t] * s_[t]
                        gw[c, i, j] += a

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def bwd_x(gt, w, sh, sw, gpad):  # pragma: no cover - compiled
        c_, n_, ho, wo = gt.shape
        kh, kw = w.shape[1], w.shape[2]
        hp, wp = gpad.shape[2], gpad.shape[3]
        hq, wq = (hp + sh - 1) // sh, (wp + sw - 1) // sw
        strided = sh > 1 or sw > 1
        ph = np.zeros((sh, sw, hq, wq), dtype=gpad.dtype)
        span = (ho - 1) * wq + wo
        gf = np.zeros(ho * wq, dtype=gt.dtype)
        for c in range(c_):
            for n in range(n_):
                for y in range(ho):
                    grow = gt[c, n, y]
                    for x in range(wo):
                        gf[y * wq + x] = grow[x]
                if strided:
                    ph[:] = 0
                for i in range(kh):
                    for j in range(kw):
                        dst = ph[i % sh, j % sw].reshape(-1) if strided else \
                            gpad[c, n].reshape(-1)
                        off = (i // sh) * wq + j // sw
                        wv = w[c, i, j]
                        d_ = dst[off:off + span]
                        for t in range(span):
                            d_[t] += wv * gf[t]
                if strided:  # the phases back into the plane
                    plane = gpad[c, n]
                    for a in range(sh):
                        for r in range((hp - a + sh - 1) // sh):
                            row = plane[r * sh + a]
                            for b in range(sw):
                                prow = ph[a, b, r]
                                for x in range((wp - b + sw - 1) // sw):
                                    row[x * sw + b] += prow[x]

    return fwd, bwd_w, bwd_x


def _ok(*arrays) -> bool:
    return all(isinstance(a, np.ndarray) and a.dtype in (np.float32, np.float64)
               and a.flags.c_contiguous for a in arrays) and len({a.dtype for a in arrays}) == 1


def _per_channel(kernel, arrays, size):
    """Every loop is per channel: channel ranges on the elementwise threads give the same
    bits as one call."""
    split_rows(lambda lo, hi: kernel(*(a[lo:hi] for a in arrays)), arrays[0].shape[0], size)


@depthwise_conv_fwd.implement("cpu", "numba", available=numba_available)
def _fwd_numba(xt, w, sh, sw, ho, wo):
    w = np.ascontiguousarray(w)
    if not _ok(xt, w):
        return depthwise_conv_fwd.reference(xt, w, sh, sw, ho, wo)
    out = np.empty((xt.shape[0], xt.shape[1], ho, wo), dtype=xt.dtype)
    fwd = _kernels()[0]
    _per_channel(lambda x_, w_, o_: fwd(x_, w_, sh, sw, o_), (xt, w, out), out.size)
    return out


@depthwise_conv_bwd.implement("cpu", "numba", available=numba_available)
def _bwd_numba(gt, xt, w, sh, sw, need_x, need_w):
    gt, w = np.ascontiguousarray(gt), np.ascontiguousarray(w)
    if not _ok(gt, xt, w):
        return depthwise_conv_bwd.reference(gt, xt, w, sh, sw, need_x, need_w)
    _, bwd_w, bwd_x = _kernels()
    gpad = gw = None
    if need_x:
        gpad = np.zeros_like(xt)
        _per_channel(lambda g_, w_, p_: bwd_x(g_, w_, sh, sw, p_), (gt, w, gpad), gt.size)
    if need_w:
        gw = np.empty(w.shape, dtype=xt.dtype)
        _per_channel(lambda g_, x_, o_: bwd_w(g_, x_, sh, sw, o_), (gt, xt, gw), gt.size)
    return gpad, gw


def _ops():
    return depthwise_conv_fwd, depthwise_conv_bwd


class DepthwiseConv2dFn(Function):
    """x (N, C, H, W), w (C * k, 1, kh, kw), optional bias (C * k,); symmetric padding."""

    def forward(self, x, w, b=None, stride=(1, 1), padding=(0, 0)):
        xp = xp_of(x)
        fwd, _ = _ops()
        n, c, h, wd = x.shape
        co, _, kh, kw = w.shape
        mult = co // c
        (sh, sw), (ph, pw) = stride, padding
        self.low = None
        if x.dtype.itemsize == 2 or w.dtype.itemsize == 2:  # bfloat16 / float16: accumulate
            self.low = (x.dtype, w.dtype)  # in float32 as torch does, round the output
            x, w = x.astype(np.float32), w.astype(np.float32)
            b = None if b is None else b.astype(np.float32)
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
        if self.low is not None and self.low[0] == self.low[1]:
            out = out.astype(self.low[0])
        return out.transpose(1, 0, 2, 3)

    def backward(self, g):
        xt, w = self.saved
        xp = xp_of(xt)
        _, bwd = _ops()
        n, c, h, wd, kh, kw, sh, sw, ph, pw, mult = self.geom
        co = w.shape[0]
        nx, nw, nb = self.needs_input_grad
        low, gdt = getattr(self, "low", None), g.dtype
        if low is not None and g.dtype != np.float32:
            g = g.astype(np.float32)
        gt = xp.ascontiguousarray(g.transpose(1, 0, 2, 3))  # (Co, N, Ho, Wo); free usually
        gb = gt.reshape(co, -1).sum(axis=1) if nb else None
        gpad, gw = bwd(gt, xt, w.reshape(co, kh, kw), sh, sw, bool(nx), bool(nw))
        gx = None
        if nx:
            if mult > 1:
                gpad = gpad.reshape((c, mult) + gpad.shape[1:]).sum(axis=1)
            gx = gpad[:, :, ph : ph + h, pw : pw + wd].transpose(1, 0, 2, 3)
        gw = gw.reshape(w.shape) if nw else None
        if low is not None:  # 16-bit operands: 16-bit gradients
            gx = None if gx is None else gx.astype(low[0])
            gw = None if gw is None else gw.astype(low[1])
            gb = None if gb is None else gb.astype(gdt)
        return gx, gw, gb


    def backward_t(self, want, g):
        """The double-backward rule, in differentiable tensor ops: per kernel offset (i, j)
        the weight gradient is ``sum(g * window)`` and the input gradient puts
        ``g * w[:, 0, i, j]`` back into the window (kh * kw small ops, for WGAN-GP critics,
        MAML and other gradients of gradients)."""
        from ...double_helpers import input_t
        from ...double_rules import IndexGrad
        from ...ops_shape import Stack

        xt, w = self.saved
        n, c, h, wd, kh, kw, sh, sw, ph, pw, mult = self.geom
        co = w.shape[0]
        ho, wo = g.shape[2], g.shape[3]
        hp, wp = h + 2 * ph, wd + 2 * pw

        def window(i, j):
            return (slice(None), slice(None), slice(i, i + sh * (ho - 1) + 1, sh),
                    slice(j, j + sw * (wo - 1) + 1, sw))

        gx = gw = gb = None
        if want[1]:
            x = input_t(self, 0, xt[::mult, :, ph:ph + h, pw:pw + wd].transpose(1, 0, 2, 3))
            if mult > 1:  # output channel o reads input channel o // mult
                x = x.reshape(n, c, 1, h, wd).expand(n, c, mult, h, wd).reshape(n, co, h, wd)
            xpad = IndexGrad.apply(x, index=(slice(None), slice(None), slice(ph, ph + h),
                                             slice(pw, pw + wd)), shape=(n, co, hp, wp))
            parts = [(g * xpad[window(i, j)]).sum(axis=(0, 2, 3))
                     for i in range(kh) for j in range(kw)]
            gw = Stack.apply(*parts, axis=1).reshape(co, 1, kh, kw)
        if want[0]:
            w_t = input_t(self, 1, w)
            total = None
            for i in range(kh):
                for j in range(kw):
                    part = IndexGrad.apply(g * w_t[:, 0, i, j].reshape(1, co, 1, 1),
                                           index=window(i, j), shape=(n, co, hp, wp))
                    total = part if total is None else total + part
            gx = total[:, :, ph:ph + h, pw:pw + wd]
            if mult > 1:
                gx = gx.reshape(n, c, mult, h, wd).sum(axis=2)
        if want[2]:
            gb = g.sum(axis=(0, 2, 3))
        return gx, gw, gb


def depthwise_conv2d(x, weight, bias, stride, padding):
    """The node for ``conv2d(groups=x.shape[1])`` once ``padding`` is a pair of ints."""
    return DepthwiseConv2dFn.apply(x, weight, bias, stride=tuple(stride),
                                   padding=tuple(padding))

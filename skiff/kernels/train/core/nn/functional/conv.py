"""Convolution and pooling over NCHW arrays as autograd nodes: ``conv2d`` (im2col into a
per-thread scratch buffer, one GEMM), ``max_pool2d`` and ``avg_pool2d``.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ... import autocast_ops as _ac
from ... import half_cast as _hc
from ...autograd import Function, xp_of
from ...gemm import active as gemm_active
from ...gemm import mm
from ...layout_r45 import keeps_channels_last
from ...shape_error import check_conv_dtypes
from ...tensor import Tensor
from ..fused import col2im, max_pool_bwd
from .dense import layer_input

__all__ = ["conv2d", "max_pool2d", "avg_pool2d"]


def as_pair(v, name):
    """``(h, w)`` from an int or a pair of ints (``name`` is for the message)."""
    if isinstance(v, int):
        return v, v
    if isinstance(v, (tuple, list)) and len(v) == 2:
        return int(v[0]), int(v[1])
    raise ValueError(f"{name} must be an int or a pair of ints, got {v!r}")


def _windows(xp_arr, kh, kw, sh, sw, ho, wo):
    """(N, C, kh, kw, Ho, Wo) patches of a padded (N, C, H, W) array (k*k slice copies)."""
    xp = xp_of(xp_arr)
    n, c = xp_arr.shape[:2]
    cols = xp.empty((n, c, kh, kw, ho, wo), dtype=xp_arr.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp_arr[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
    return cols


_scratch = threading.local()

# 3x3 stride-1 layers with 16+ channels on numpy take Winograd F(2x2, 3x3)
# (:mod:`.conv_winograd`); False: every layer takes im2col (benchmarks and tests compare both)
WINOGRAD = True
# im2col columns up to this many bytes are kept from the forward for the weight gradient
# instead of rebuilt (round 34: small-channel layers, a UNet's; 0 turns it off); a strided
# layer's (no Winograd path; its columns are only (kh*kw)/(sh*sw) times the input) up to
# KEEP_COLS_STRIDED (round 36: fwd+bwd CPU -8 to -10% at 14-20 MB of columns)
KEEP_COLS = 8 << 20
KEEP_COLS_STRIDED = 32 << 20


def _workspace(xp, shape, dtype):
    """A per-thread scratch buffer for im2col columns, reused across calls of the same shape
    (the columns never outlive the GEMM that reads them), so a step does not pay fresh pages
    for tens of MB each time."""
    if xp is not np:
        return xp.empty(shape, dtype=dtype)
    key = (shape, np.dtype(dtype).str)
    cache = getattr(_scratch, "bufs", None)
    if cache is None:
        cache = _scratch.bufs = {}
    buf = cache.get(key)
    if buf is None:
        if len(cache) > 8:
            cache.clear()
        buf = cache[key] = np.empty(shape, dtype=dtype)
    return buf


def _by_channels(fn, c: int, size: int, xp) -> None:
    """``fn(lo, hi)`` over channel ranges: on numpy in pieces on the elementwise threads
    (copies release the GIL; each piece writes its own channels), else in one call."""
    if xp is np:
        from skiff.kernels.backend.split import split_rows

        split_rows(fn, c, size)
    else:
        fn(0, c)


def _cols_cn(xt, kh, kw, sh, sw, ho, wo, out):
    """im2col of a channels-first padded (C, N, Hp, Wp) array into ``out`` of shape
    (C, kh, kw, N, Ho, Wo): kh*kw strided slice copies, each over whole (C, N) planes."""
    def copy(lo, hi):
        for i in range(kh):
            for j in range(kw):
                out[lo:hi, i, j] = xt[lo:hi, :, i : i + sh * ho : sh, j : j + sw * wo : sw]

    _by_channels(copy, xt.shape[0], out.size, xp_of(xt))
    return out


def _padded_cn(x, ph, pw):
    """The (N, C, H, W) input as a channels-first (C, N, H + 2ph, W + 2pw) array with zero
    borders (a contiguous copy of the transpose when there is no padding)."""
    xp = xp_of(x)
    n, c, h, wd = x.shape
    src = x.transpose(1, 0, 2, 3)
    if not (ph or pw) and src.flags.c_contiguous:  # a conv's output: free
        return src
    xt = xp.empty((c, n, h + 2 * ph, wd + 2 * pw), dtype=x.dtype)

    def copy(lo, hi):
        part = xt[lo:hi]
        if ph:
            part[:, :, :ph] = 0
            part[:, :, ph + h:] = 0
        if pw:
            part[:, :, ph : ph + h, :pw] = 0
            part[:, :, ph : ph + h, pw + wd:] = 0
        part[:, :, ph : ph + h, pw : pw + wd] = src[lo:hi]

    _by_channels(copy, c, xt.size, xp)
    return xt


class Conv2dFn(Function):
    """NCHW convolution by im2col + one GEMM over the whole batch.

    Internally channels-first-then-batch (C, N, H, W): the input is transposed (and padded)
    once, the columns are (C*kh*kw, N*Ho*Wo) so forward, weight gradient and input gradient
    are each a single large GEMM, and the output is a (N, Cout, Ho, Wo) *view* of the
    (Cout, N*Ho*Wo) GEMM result (no copy; the next conv's transpose of it is free). Keeps
    the padded, transposed input and the weight; the columns are rebuilt in backward into a
    reused scratch buffer.
    """

    def forward(self, x, w, b, stride=(1, 1), padding=(0, 0)):
        xp = xp_of(x)
        n, c, h, wd = x.shape
        cout, _, kh, kw = w.shape
        (sh, sw), (ph, pw) = stride, padding
        ho = (h + 2 * ph - kh) // sh + 1
        wo = (wd + 2 * pw - kw) // sw + 1
        self.geom = (n, c, h, wd, kh, kw, sh, sw, ph, pw, ho, wo)
        xt = _padded_cn(x, ph, pw)
        self.save_for_backward(xt, w)
        ck = c * kh * kw
        w2 = w.reshape(cout, ck)
        self.cols = None
        if kh == kw == 1 and sh == sw == 1:
            cols = xt.reshape(c, n * ho * wo)
        else:
            shape = (c, kh, kw, n, ho, wo)
            cap = KEEP_COLS_STRIDED if sh > 1 or sw > 1 else KEEP_COLS
            keep = (KEEP_COLS and self.needs_input_grad[1]
                    and math.prod(shape) * x.dtype.itemsize <= cap)
            cols = _cols_cn(xt, kh, kw, sh, sw, ho, wo, xp.empty(shape, dtype=x.dtype) if keep
                            else _workspace(xp, shape, x.dtype)).reshape(ck, -1)
            if keep:  # a small layer's columns kept for the weight gradient (not rebuilt)
                self.cols = cols
        y = _mm_cols(w2, cols)  # (Cout, N*Ho*Wo)
        if b is not None:
            def add_bias(lo, hi):
                y[lo:hi] += b[lo:hi, None]

            _by_channels(add_bias, cout, y.size, xp)
        if x.dtype == w.dtype and y.dtype != x.dtype and x.dtype.itemsize == 2:
            y = _hc.cast(y, x.dtype)  # bfloat16 in, bfloat16 out (torch's; numpy's GEMM: f32)
        return y.reshape(cout, n, ho, wo).transpose(1, 0, 2, 3)

    def backward(self, g):
        xt, w = self.saved
        xp = xp_of(g)
        n, c, h, wd, kh, kw, sh, sw, ph, pw, ho, wo = self.geom
        cout = w.shape[0]
        ck = c * kh * kw
        nx, nw, nb = self.needs_input_grad
        g2 = g.transpose(1, 0, 2, 3).reshape(cout, n * ho * wo)  # a view when g is ours
        gw = gb = gx = None
        if nb:  # a GEMV with ones: ~3x faster than the pairwise row sum (a graph: a sum)
            gb = g2.sum(axis=1) if gemm_active() else g2 @ xp.ones(g2.shape[1], dtype=g2.dtype)
        if nw:
            if kh == kw == 1 and sh == sw == 1:
                cols = xt.reshape(c, n * ho * wo)
            elif getattr(self, "cols", None) is not None:
                cols = self.cols
            else:
                cols = _cols_cn(xt, kh, kw, sh, sw, ho, wo,
                                _workspace(xp, (c, kh, kw, n, ho, wo), xt.dtype)).reshape(ck, -1)
            gw = _mm_cols_t(g2, cols).reshape(w.shape)
        if nx and kh == kw == 1 and sh == sw == 1 and ph == pw == 0:
            # a pointwise conv's column gradient is already the image gradient (no col2im)
            gx = mm(w.reshape(cout, c).T, g2).reshape(c, n, h, wd).transpose(1, 0, 2, 3)
        elif nx:
            gcols = mm(w.reshape(cout, ck).T, g2).reshape(c, kh, kw, n, ho, wo)
            gpad = col2im(gcols, h + 2 * ph, wd + 2 * pw, sh, sw)
            gx = gpad[:, :, ph : ph + h, pw : pw + wd].transpose(1, 0, 2, 3)
        if xt.dtype.itemsize == 2 or w.dtype.itemsize == 2:  # 16-bit operands: 16-bit grads
            gx = _as(gx, xt.dtype)
            gw, gb = _as(gw, w.dtype), _as(gb, g.dtype)
        return gx, gw, gb


# Columns of at most SMALL_K rows (first layers: 1-3 input channels, 3x3 to 5x5 kernels)
# multiply in CHUNK-column pieces: OpenBLAS streams such a flat (K x N*Ho*Wo) product from
# memory, the pieces stay in cache (K = 9, 64x28x28: forward 1.01 -> 0.62 ms, weight
# gradient 1.18 -> 0.57; K = 27: 2.63 -> 1.67; K = 72: no gain, round 34)
SMALL_K, CHUNK = 32, 1024


def _small(w2, cols):
    return (type(cols) is np.ndarray and cols.shape[0] <= SMALL_K and cols.shape[1] > 2 * CHUNK
            and cols.dtype in (np.float32, np.float64) and w2.dtype == cols.dtype)


def _mm_cols(w2, cols):
    """``w2 @ cols`` (Cout, K) x (K, P)."""
    if not _small(w2, cols):
        return mm(w2, cols)
    p = cols.shape[1]
    y = np.empty((w2.shape[0], p), dtype=cols.dtype)
    for s in range(0, p, CHUNK):
        np.matmul(w2, cols[:, s:s + CHUNK], out=y[:, s:s + CHUNK])
    return y


def _mm_cols_t(g2, cols):
    """``g2 @ cols.T`` (Cout, P) x (P, K): the weight gradient."""
    if not _small(g2, cols):
        return mm(g2, cols.T)
    p = cols.shape[1]
    acc = np.zeros((g2.shape[0], cols.shape[0]), dtype=cols.dtype)
    for s in range(0, p, CHUNK):
        acc += g2[:, s:s + CHUNK] @ cols[:, s:s + CHUNK].T
    return acc


def _as(a, dtype):
    return a if a is None or a.dtype == dtype else _hc.cast(a, dtype)


class Conv3x3WinogradFn(Conv2dFn):
    """A 3x3 stride-1 convolution by Winograd F(2x2, 3x3) (:mod:`.conv_winograd`), in
    :class:`Conv2dFn`'s output layout and geometry. It keeps the input itself as a
    channels-first view (no padded copy: the tile transform reads the padding as zeros, in
    forward and for the weight gradient; round 39: forward 10-15% faster, bit-identical);
    ``Conv2dFn``'s double-backward rule gets the padded copy it reads, made then."""

    def forward(self, x, w, b, stride=(1, 1), padding=(1, 1)):
        from .conv_winograd import winograd_conv3x3

        n, c, h, wd = x.shape
        ph, pw = padding
        ho, wo = h + 2 * ph - 2, wd + 2 * pw - 2
        self.geom = (n, c, h, wd, 3, 3, 1, 1, ph, pw, ho, wo)
        xcn = x.transpose(1, 0, 2, 3)
        self.save_for_backward(xcn, w)
        return winograd_conv3x3(xcn, w, b, ph, pw, ho, wo).transpose(1, 0, 2, 3)

    def backward(self, g):
        from .conv_winograd import winograd_backward

        xcn, w = self.saved
        return winograd_backward(xcn, w, g, self.geom, self.needs_input_grad, padded=False)

    def backward_t(self, want, g):  # Conv2dFn's rule (installed by double_rules_nn)
        xcn, w = saved = self.saved
        ph, pw = self.geom[8:10]
        self.saved = (_padded_cn(xcn.transpose(1, 0, 2, 3), ph, pw), w)  # the rule's layout
        try:
            return Conv2dFn.backward_t(self, want, g)
        finally:
            self.saved = saved


def conv2d(x: Tensor, weight: Tensor, bias=None, stride=1, padding=0, dilation=1,
           groups=1) -> Tensor:
    """2-D convolution (cross-correlation) on NCHW input with an (out, in / groups, kh, kw)
    weight; ``dilation``, ``groups`` and ``padding="same"``/``"valid"`` as torch's
    (:mod:`.conv_general`). An unbatched (C, H, W) input gives (C_out, H', W'), as torch's;
    a raw array ``x`` takes the weight's dtype (:func:`.dense.layer_input`).
    A channels-last input gives a channels-last output, as torch's (round 44)."""
    x = layer_input(x, weight)
    flags = None if getattr(x, "_batched", False) else getattr(getattr(x, "_data", None),
                                                               "flags", None)
    if x.ndim == 4 and flags is not None and not flags.c_contiguous and x.shape[1] > 1:
        from ...top_names_r43 import channels_last

        if x.is_contiguous(memory_format=channels_last):
            y = conv2d(x.contiguous(), weight, bias, stride, padding, dilation, groups)
            return y.contiguous(memory_format=channels_last)
    if x.ndim == 3:
        return conv2d(x.unsqueeze(0), weight, bias, stride, padding, dilation, groups)[0]
    if x.ndim != 4:
        raise ValueError(f"conv2d expects 3D (unbatched) or 4D (batched, NCHW) input, got "
                         f"shape {tuple(x.shape)}")
    if _ac.LOW is not None:  # autocast("cpu"): torch's lower-precision op
        x, weight, bias = _ac.low(x, weight, bias)
    check_conv_dtypes(x, weight, bias)
    if not isinstance(padding, str):
        _kernel_fits(x.shape[2:], weight.shape[2:], as_pair(padding, "padding"),
                     as_pair(dilation, "dilation"))
    if dilation != 1 or groups != 1 or isinstance(padding, str):
        from .conv_general import conv2d_general

        return conv2d_general(x, weight, bias, stride, padding, dilation, groups, conv2d)
    if x.shape[1] != weight.shape[1]:
        from ...shape_error import ShapeError

        raise ShapeError(
            f"Given groups=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[1]} channels, but got {x.shape[1]} channels "
            f"instead; conv2d: input of shape {tuple(x.shape)} has {x.shape[1]} channels, "
            f"weight of shape {tuple(weight.shape)} expects {weight.shape[1]}"
            + ("; images channels-last (N, H, W, C)? use X.transpose(0, 3, 1, 2)"
               if x.shape[-1] == weight.shape[1] else "")
        )
    stride, padding = as_pair(stride, "stride"), as_pair(padding, "padding")
    if WINOGRAD:
        from .conv_winograd import use_winograd

        if use_winograd(x, weight, stride, padding):
            return Conv3x3WinogradFn.apply(x, weight, bias, stride=stride, padding=padding)
    return Conv2dFn.apply(x, weight, bias, stride=stride, padding=padding)


def _kernel_fits(size, kernel, padding, dilation):
    """torch's RuntimeError (a :class:`ShapeError`) where the dilated kernel is larger than
    the padded input: numpy's slicing would give an empty output silently."""
    padded = tuple(s + 2 * p for s, p in zip(size, padding))
    eff = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilation))
    if any(e > p for e, p in zip(eff, padded)):
        from ...shape_error import ShapeError

        raise ShapeError(f"Calculated padded input size per channel: ("
                         f"{' x '.join(map(str, padded))}). Kernel size: ("
                         f"{' x '.join(map(str, eff))}). Kernel size can't be greater than "
                         f"actual input size")


def cn_view(a):
    """``a`` with axes 0 and 1 swapped when that makes it C-contiguous (conv outputs are
    (N, C, H, W) views of channels-first memory); pools then run on contiguous memory and
    hand back the same kind of view."""
    if a.ndim == 4 and not a.flags.c_contiguous:
        t = a.transpose(1, 0, 2, 3)
        if t.flags.c_contiguous:
            return t, True
    return a, False


def _pool_geom(x, kernel_size, stride):
    kh, kw = as_pair(kernel_size, "kernel_size")
    sh, sw = as_pair(stride if stride is not None else (kh, kw), "stride")
    n, c, h, w = x.shape
    ho, wo = (h - kh) // sh + 1, (w - kw) // sw + 1
    if ho < 1 or wo < 1:  # torch's RuntimeError (numpy's slices: an empty output)
        from ...shape_error import ShapeError

        raise ShapeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                         f"({c}x{max(ho, 0)}x{max(wo, 0)}). Output size is too small")
    return kh, kw, sh, sw, ho, wo


class MaxPool2dFn(Function):
    """Max over windows. Forward walks the kh*kw window offsets with running ``maximum`` and
    records, per output, the first offset that holds the max (torch's tie rule) as int8/int16
    (a NaN propagates to the output through ``maximum``);
    backward writes ``g`` where the index matches, one strided pass per offset (assignment
    instead of accumulation when windows do not overlap)."""

    def forward(self, x, geom=None):
        xp = xp_of(x)
        kh, kw, sh, sw, ho, wo = geom
        self.geom, self.shape = geom, x.shape
        kk = kh * kw
        itype = xp.int8 if kk <= 127 else (xp.int16 if kk < 32000 else xp.int32)
        x, self.swap = cn_view(x)
        out = arg = upd = tmp = None
        for i in range(kh):
            for j in range(kw):
                s = x[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
                if out is None:
                    out = s.copy()
                    arg = xp.zeros(out.shape, dtype=itype)
                    upd = xp.empty(out.shape, dtype=bool)
                    tmp = xp.empty(out.shape, dtype=itype)
                    continue
                # offsets come in increasing order, so the last offset that raised the max
                # is the largest q with an update: arg = max over q of q * update_q
                # (masked stores and where() are ~10x slower than these two passes)
                xp.greater(s, out, out=upd)
                xp.multiply(upd, itype(i * kw + j), out=tmp)
                xp.maximum(arg, tmp, out=arg)
                xp.maximum(out, s, out=out)
        self.save_for_backward(arg)
        return out.transpose(1, 0, 2, 3) if self.swap else out

    def backward(self, g):
        (arg,) = self.saved
        kh, kw, sh, sw, ho, wo = self.geom
        n, c, h, w = self.shape
        shape = (c, n, h, w) if self.swap else (n, c, h, w)
        if self.swap:
            g = g.transpose(1, 0, 2, 3)
        gx = max_pool_bwd(g, arg, shape[2], shape[3], kh, kw, sh, sw)
        return gx.transpose(1, 0, 2, 3) if self.swap else gx


class AvgPool2dFn(Function):
    def forward(self, x, geom=None):
        kh, kw, sh, sw, ho, wo = geom
        self.geom, self.shape = geom, x.shape
        x, self.swap = cn_view(x)
        out = None
        for i in range(kh):
            for j in range(kw):
                s = x[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
                out = s.copy() if out is None else out.__iadd__(s)
        out *= 1.0 / (kh * kw)
        return out.transpose(1, 0, 2, 3) if self.swap else out

    def backward(self, g):
        xp = xp_of(g)
        kh, kw, sh, sw, ho, wo = self.geom
        n, c, h, w = self.shape
        if self.swap:
            g = g.transpose(1, 0, 2, 3)
        gx = xp.zeros((c, n, h, w) if self.swap else (n, c, h, w), dtype=g.dtype)
        gs = g * (1.0 / (kh * kw))
        for i in range(kh):
            for j in range(kw):
                gx[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw] += gs
        return gx.transpose(1, 0, 2, 3) if self.swap else gx


class _PadFn(Function):
    """(N, C, H, W) with ``ph``/``pw`` rows and columns of ``value`` on each side."""

    def forward(self, x, ph=0, pw=0, value=0.0):
        self.ph, self.pw, (h, w) = ph, pw, x.shape[2:]
        out = xp_of(x).full(x.shape[:2] + (h + 2 * ph, w + 2 * pw), value, dtype=x.dtype)
        out[:, :, ph:ph + h, pw:pw + w] = x
        return out

    def backward(self, g):
        h, w = g.shape[2] - 2 * self.ph, g.shape[3] - 2 * self.pw
        return g[:, :, self.ph:self.ph + h, self.pw:self.pw + w]


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def max_pool2d(x: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False) -> Tensor:
    """Max over (kh, kw) windows of NCHW input (stride defaults to the kernel size);
    ``padding`` adds -inf on each side (at most half the kernel, as torch's). ``dilation``,
    ``ceil_mode`` and ``return_indices`` (torch's flat indices, for ``max_unpool2d``) take
    :func:`.pool_nd.max_pool_nd`. An unbatched (C, H, W) input as torch's."""
    if x.ndim == 3 and not (dilation != 1 or ceil_mode or return_indices):
        return max_pool2d(x.unsqueeze(0), kernel_size, stride, padding)[0]
    if dilation != 1 or ceil_mode or return_indices:
        from .pool_nd import max_pool_nd, nd_pool_args

        if x.ndim == 3:  # unbatched (C, H, W)
            out = max_pool2d(x.unsqueeze(0), kernel_size, stride, padding, dilation,
                             ceil_mode, return_indices)
            return (out[0][0], out[1][0]) if return_indices else out[0]
        return max_pool_nd(x, *nd_pool_args(x, 2, kernel_size, stride, padding, dilation,
                                            "max_pool2d"), ceil_mode, return_indices)
    ph, pw = as_pair(padding, "padding")
    if ph or pw:
        kh, kw = as_pair(kernel_size, "kernel_size")
        if ph < 0 or pw < 0 or 2 * ph > kh or 2 * pw > kw:
            raise ValueError(f"max_pool2d padding {padding!r} must be at least 0 and at most "
                             f"half the kernel size {kernel_size!r}")
        x = _PadFn.apply(x, ph=ph, pw=pw, value=-np.inf)
    return MaxPool2dFn.apply(x, geom=_pool_geom(x, kernel_size, stride))


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def avg_pool2d(x: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None) -> Tensor:
    """Mean over (kh, kw) windows of NCHW input (stride defaults to the kernel size);
    torch's ``padding``, ``count_include_pad`` and ``divisor_override`` take
    :func:`.pool_nd.avg_pool_nd`."""
    if padding != 0 or ceil_mode or divisor_override is not None or x.ndim == 3:
        from .pool_nd import avg_pool_nd

        return avg_pool_nd(x, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, "avg_pool2d")
    return AvgPool2dFn.apply(x, geom=_pool_geom(x, kernel_size, stride))

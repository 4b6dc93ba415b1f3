"""``skiff.nn.functional``: fused layer ops as autograd nodes.

Each fused node computes its forward in a few whole-array ``xp`` expressions and keeps the
least its backward needs: ``linear`` its input and weight; ``layer_norm`` the normalised input
and the reciprocal std (the input itself is not kept); ``cross_entropy`` the probabilities;
``scaled_dot_product_attention`` q, k, v and the attention probabilities;
``packed_causal_attention`` only q, k, v, the output and the log-sum-exp per row (the
probabilities are recomputed, flash-attention style).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..autograd import Function, xp_of
from ..ops_math import Relu, Sigmoid
from ..ops_shape import scatter_add
from ..random import get_generator
from ..tensor import Tensor
from .fused import col2im, gelu_tanh_grad, layer_norm_bwd, layer_norm_fwd, max_pool_bwd

__all__ = [
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "mse_loss",
    "layer_norm",
    "rms_norm",
    "dropout",
    "linear",
    "embedding",
    "conv2d",
    "batch_norm",
    "max_pool2d",
    "avg_pool2d",
    "scaled_dot_product_attention",
    "packed_causal_attention",
]


def _erf(x):
    xp = xp_of(x)
    if xp is np:
        from scipy.special import erf

        return erf(x)
    import cupyx.scipy.special  # pragma: no cover - GPU

    return cupyx.scipy.special.erf(x)  # pragma: no cover - GPU


# ---- activations ----------------------------------------------------------------------------
def relu(x: Tensor) -> Tensor:
    return Relu.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(x)


_K = math.sqrt(2.0 / math.pi)


class GeluFn(Function):
    def forward(self, x, approximate="tanh"):
        self.approximate = approximate
        self.save_for_backward(x)
        if approximate == "tanh":
            xp = xp_of(x)
            inner = xp.asarray(x * x)  # numpy turns 0-d products into scalars; keep an array
            inner *= 0.044715
            inner += 1
            inner *= x
            inner *= _K
            t = xp.tanh(inner, out=inner)
            t += 1
            t *= x
            t *= 0.5
            return t
        return 0.5 * x * (1 + _erf(x * (1 / math.sqrt(2.0))))

    def backward(self, g):
        (x,) = self.saved
        xp = xp_of(x)
        if self.approximate == "tanh":
            return gelu_tanh_grad(x, xp.ascontiguousarray(g).reshape(g.shape))
        cdf = 0.5 * (1 + _erf(x * (1 / math.sqrt(2.0))))
        pdf = xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        return g * (cdf + x * pdf)


def gelu(x: Tensor, approximate: str = "tanh") -> Tensor:
    """GELU; ``approximate="tanh"`` (GPT-2) or ``"none"`` (exact, with erf)."""
    if approximate not in ("tanh", "none"):
        raise ValueError(f"approximate must be 'tanh' or 'none', got {approximate!r}")
    return GeluFn.apply(x, approximate=approximate)


class SiluFn(Function):
    def forward(self, x):
        xp = xp_of(x)
        s = 1 / (1 + xp.exp(-x))
        self.save_for_backward(x, s)
        return x * s

    def backward(self, g):
        x, s = self.saved
        return g * s * (1 + x * (1 - s))


def silu(x: Tensor) -> Tensor:
    return SiluFn.apply(x)


# ---- softmax and losses ---------------------------------------------------------------------
class SoftmaxFn(Function):
    def forward(self, x, axis=-1):
        xp = xp_of(x)
        self.axis = axis
        e = x - x.max(axis=axis, keepdims=True)
        xp.exp(e, out=e)
        e /= e.sum(axis=axis, keepdims=True)
        self.save_for_backward(e)
        return e

    def backward(self, g):
        (p,) = self.saved
        gx = g * p
        gx -= p * gx.sum(axis=self.axis, keepdims=True)
        return gx


class LogSoftmaxFn(Function):
    def forward(self, x, axis=-1):
        xp = xp_of(x)
        self.axis = axis
        s = x - x.max(axis=axis, keepdims=True)
        s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
        self.save_for_backward(s)
        return s

    def backward(self, g):
        (s,) = self.saved
        return g - xp_of(s).exp(s) * g.sum(axis=self.axis, keepdims=True)


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    return SoftmaxFn.apply(x, axis=axis)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    return LogSoftmaxFn.apply(x, axis=axis)


class CrossEntropyFn(Function):
    """Fused, stable log-softmax + NLL over the last axis; keeps the probabilities."""

    def forward(self, logits, target, ignore_index=-100, reduction="mean"):
        xp = xp_of(logits)
        c = logits.shape[-1]
        x = logits.reshape(-1, c)
        t = target.reshape(-1)
        self.shape = logits.shape
        valid = t != ignore_index
        safe_t = xp.where(valid, t, 0)
        p = x - x.max(axis=1, keepdims=True)
        xp.exp(p, out=p)
        z = p.sum(axis=1, keepdims=True)
        p /= z
        rows = xp.arange(x.shape[0])
        # loss_i = -log p[i, t_i]; from the shifted logits for accuracy
        picked = p[rows, safe_t]
        loss = -xp.log(xp.maximum(picked, xp.finfo(p.dtype).tiny))
        loss *= valid
        self.reduction = reduction
        self.count = max(int(valid.sum()), 1) if reduction == "mean" else 1
        self.save_for_backward(p, safe_t, valid)
        if reduction == "none":
            return loss.reshape(target.shape)
        total = loss.sum()
        return total / self.count if reduction == "mean" else total

    def backward(self, g):
        p, t, valid = self.saved
        xp = xp_of(p)
        if self.reduction == "none":
            scale = (g.reshape(-1) * valid).astype(p.dtype)[:, None]
        else:
            scale = (valid * (g / self.count)).astype(p.dtype)[:, None]
        gx = p * scale
        gx[xp.arange(p.shape[0]), t] -= scale[:, 0]
        return gx.reshape(self.shape), None


_REDUCTIONS = ("mean", "sum", "none")


def cross_entropy(logits: Tensor, target, ignore_index: int = -100, reduction: str = "mean"):
    """Cross-entropy of ``logits`` (N, C) (or (..., C)) against integer ``target`` (N,).

    Targets equal to ``ignore_index`` add nothing and do not count in the mean.
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    t = target.data if isinstance(target, Tensor) else target
    if not hasattr(t, "dtype"):
        t = np.asarray(t)
    if t.dtype.kind not in "iu":
        raise TypeError(
            f"cross_entropy targets must be integer class indices, got dtype {t.dtype}"
        )
    if tuple(t.shape) != tuple(logits.shape[:-1]):
        raise ValueError(
            f"cross_entropy: logits of shape {tuple(logits.shape)} need targets of shape "
            f"{tuple(logits.shape[:-1])}, got {tuple(t.shape)}"
        )
    return CrossEntropyFn.apply(logits, t, ignore_index=ignore_index, reduction=reduction)


def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Mean squared error (``reduction`` mean, sum or none)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    tshape = tuple(getattr(target, "shape", ()))
    if tshape != tuple(input.shape):
        raise ValueError(
            f"mse_loss: input shape {tuple(input.shape)} != target shape {tshape}"
        )
    d = input - target
    sq = d * d
    if reduction == "none":
        return sq
    return sq.mean() if reduction == "mean" else sq.sum()


# ---- normalisation --------------------------------------------------------------------------
class LayerNormFn(Function):
    """Row-wise layer norm; the math is the fused custom ops in :mod:`.fused`."""

    def forward(self, x, w, b, eps=1e-5):
        c = x.shape[-1]
        y, xhat, rstd = layer_norm_fwd(x.reshape(-1, c), w, b, eps)
        self.shape = x.shape
        self.save_for_backward(xhat, rstd, w)
        return y.reshape(x.shape)

    def backward(self, g):
        xhat, rstd, w = self.saved
        g2 = xp_of(g).ascontiguousarray(g.reshape(xhat.shape))
        gx, gw, gb = layer_norm_bwd(g2, xhat, rstd, w)
        _, nw, nb = self.needs_input_grad
        return gx.reshape(self.shape), gw if nw else None, gb if nb else None


def layer_norm(x: Tensor, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Layer normalisation over the last axis."""
    return LayerNormFn.apply(x, weight, bias, eps=eps)


class RMSNormFn(Function):
    def forward(self, x, w, eps=1e-6):
        xp = xp_of(x)
        rstd = 1.0 / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)
        xhat = x * rstd
        self.save_for_backward(xhat, rstd, w)
        return xhat * w if w is not None else xhat

    def backward(self, g):
        xhat, rstd, w = self.saved
        lead = tuple(range(g.ndim - 1))
        gw = (g * xhat).sum(axis=lead) if self.needs_input_grad[1] else None
        gxh = g * w if w is not None else g
        gx = None
        if self.needs_input_grad[0]:
            gx = gxh - xhat * (gxh * xhat).mean(axis=-1, keepdims=True)
            gx *= rstd
        return gx, gw


def rms_norm(x: Tensor, weight=None, eps: float = 1e-6) -> Tensor:
    """RMS normalisation over the last axis."""
    return RMSNormFn.apply(x, weight, eps=eps)


class BatchNormFn(Function):
    """Batch norm over all axes but 1 (channels); eval mode uses the given statistics.

    Works on a 3-D view: (C, 1, M) when the input is a channels-first view (what conv2d
    returns), else (N, C, L); reductions then run over contiguous rows. Backward is one
    expression per element, ``gx = k1 * g + k2 * xhat + k3`` with per-channel k's."""

    def forward(self, x, w, b, mean=None, var=None, eps=1e-5, training=True):
        xp = xp_of(x)
        self.shape, self.training = x.shape, training
        xs, self.swap = _cn_view(x)
        if self.swap:  # (C, N, H, W) memory
            x3 = xs.reshape(xs.shape[0], 1, -1)
            self.c_axis, axes = 0, (1, 2)
        else:
            x3 = x.reshape(x.shape[0], x.shape[1], -1)
            self.c_axis, axes = 1, (0, 2)
        self.axes = axes
        c = x3.shape[self.c_axis]
        cs = (c, 1, 1) if self.swap else (1, c, 1)
        self.cs = cs
        m = x3.size // c
        if training:
            mu = x3.sum(axis=axes, keepdims=True)
            mu *= 1.0 / m
            xc = x3 - mu
            v = xp.einsum("abc,abc->" + "abc"[self.c_axis], xc, xc).reshape(cs)
            v *= 1.0 / m
            self.batch_mean = mu.reshape(-1)
            self.batch_var = v.reshape(-1)
        else:
            xc = x3 - mean.reshape(cs)
            v = var.reshape(cs)
        rstd = 1.0 / xp.sqrt(v + eps)
        xc *= rstd
        self.save_for_backward(xc, rstd, w)
        y = xc * w.reshape(cs) if w is not None else xc.copy()
        if b is not None:
            y += b.reshape(cs)
        return self._out(y)

    def _out(self, a3):
        n, c = self.shape[:2]
        if self.swap:
            return a3.reshape((c, n) + self.shape[2:]).transpose(1, 0, 2, 3)
        return a3.reshape(self.shape)

    def backward(self, g):
        xp = xp_of(g)
        xhat, rstd, w = self.saved
        axes, cs = self.axes, self.cs
        nx, nw, nb = self.needs_input_grad[:3]
        g3 = (g.transpose(1, 0, 2, 3) if self.swap else g).reshape(xhat.shape)
        need_stats = nw or (nx and self.training)
        sub = "abc"[self.c_axis]
        gw = xp.einsum(f"abc,abc->{sub}", g3, xhat) if need_stats else None
        gb = g3.sum(axis=axes) if (nb or (nx and self.training)) else None
        gx = None
        if nx:
            k1 = rstd.reshape(-1) * (w if w is not None else 1.0)
            gx = g3 * k1.reshape(cs)
            if self.training:
                m = xhat.size // xhat.shape[self.c_axis]
                gx -= xhat * (k1 * gw / m).reshape(cs)
                gx -= (k1 * gb / m).reshape(cs)
            gx = self._out(gx)
        return gx, (gw if nw else None), (gb if nb else None), None, None


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=True,
               momentum=0.1, eps=1e-5):
    """Batch normalisation (N, C, ...); in training updates the running statistics in place
    the way torch does (unbiased variance in the running estimate)."""
    rm = running_mean.data if isinstance(running_mean, Tensor) else running_mean
    rv = running_var.data if isinstance(running_var, Tensor) else running_var
    out = BatchNormFn.apply(x, weight, bias, rm, rv, eps=eps, training=training)
    if training and rm is not None:
        node = out._node
        if node is None:  # no graph: recompute the statistics cheaply
            xd = x.data if isinstance(x, Tensor) else x
            axes = (0,) + tuple(range(2, xd.ndim))
            bm, bv = xd.mean(axis=axes), xd.var(axis=axes)
        else:
            bm, bv = node.batch_mean, node.batch_var
        n = x.size // x.shape[1]
        rm *= 1 - momentum
        rm += momentum * bm
        rv *= 1 - momentum
        rv += momentum * bv * (n / max(n - 1, 1))
    return out


# ---- dropout --------------------------------------------------------------------------------
class DropoutFn(Function):
    def forward(self, x, mask=None, scale=1.0):
        self.scale = scale
        self.save_for_backward(mask)
        return x * mask * x.dtype.type(scale)

    def backward(self, g):
        (mask,) = self.saved
        return g * mask * g.dtype.type(self.scale), None


def dropout(x: Tensor, p: float = 0.5, training: bool = True, generator=None) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1), got {p!r}")
    if not training or p == 0.0:
        return x
    rng = get_generator(generator)
    xp = x.xp
    if xp is np:
        mask = rng.random(x.shape, dtype=np.float32) >= p
    else:  # pragma: no cover - GPU: draw on the device from a host-derived seed
        state = xp.random.RandomState(int(rng.integers(2**63 - 1)))
        mask = state.random_sample(x.shape, dtype=np.float32) >= p
    return DropoutFn.apply(x, mask, scale=1.0 / (1.0 - p))


# ---- linear and embedding -------------------------------------------------------------------
class LinearFn(Function):
    """y = x @ W.T + b with x (..., in), W (out, in): one GEMM each way."""

    def forward(self, x, w, b):
        self.save_for_backward(x, w)
        x2 = x.reshape(-1, x.shape[-1])
        y = x2 @ w.T
        if b is not None:
            y += b
        return y.reshape(x.shape[:-1] + (w.shape[0],))

    def backward(self, g):
        x, w = self.saved
        nx, nw, nb = self.needs_input_grad
        g2 = g.reshape(-1, g.shape[-1])
        gx = (g2 @ w).reshape(x.shape) if nx else None
        gw = g2.T @ x.reshape(-1, x.shape[-1]) if nw else None
        gb = g2.sum(axis=0) if nb else None
        return gx, gw, gb


def linear(x: Tensor, weight: Tensor, bias=None) -> Tensor:
    """``x @ weight.T + bias`` (weight shape (out, in), like torch)."""
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"linear: input of shape {tuple(x.shape)} does not match weight of shape "
            f"{tuple(weight.shape)} (last input axis must be {weight.shape[1]})"
        )
    return LinearFn.apply(x, weight, bias)


class EmbeddingFn(Function):
    def forward(self, w, idx):
        self.wshape = w.shape
        self.save_for_backward(idx)
        return w[idx]

    def backward(self, g):
        (idx,) = self.saved
        xp = xp_of(g)
        gw = xp.zeros(self.wshape, dtype=g.dtype)
        scatter_add(gw, idx.reshape(-1), g.reshape(-1, self.wshape[1]))
        return gw, None


def embedding(idx, weight: Tensor) -> Tensor:
    """Rows of ``weight`` (n, d) picked by the integer array ``idx``."""
    i = idx.data if isinstance(idx, Tensor) else idx
    if not hasattr(i, "dtype"):
        i = np.asarray(i)
    if i.dtype.kind not in "iu":
        raise TypeError(f"embedding indices must be integers, got dtype {i.dtype}")
    return EmbeddingFn.apply(weight, i)


# ---- convolution and pooling ----------------------------------------------------------------
def _pair(v, name):
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


def _cols_cn(xt, kh, kw, sh, sw, ho, wo, out):
    """im2col of a channels-first padded (C, N, Hp, Wp) array into ``out`` of shape
    (C, kh, kw, N, Ho, Wo): kh*kw strided slice copies, each over whole (C, N) planes."""
    for i in range(kh):
        for j in range(kw):
            out[:, i, j] = xt[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
    return out


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
        if ph or pw:
            xt = xp.zeros((c, n, h + 2 * ph, wd + 2 * pw), dtype=x.dtype)
            xt[:, :, ph : ph + h, pw : pw + wd] = x.transpose(1, 0, 2, 3)
        else:
            xt = xp.ascontiguousarray(x.transpose(1, 0, 2, 3))
        self.save_for_backward(xt, w)
        ck = c * kh * kw
        w2 = w.reshape(cout, ck)
        if kh == kw == 1 and sh == sw == 1:
            cols = xt.reshape(c, n * ho * wo)
        else:
            cols = _cols_cn(xt, kh, kw, sh, sw, ho, wo,
                            _workspace(xp, (c, kh, kw, n, ho, wo), x.dtype)).reshape(ck, -1)
        y = w2 @ cols  # (Cout, N*Ho*Wo)
        if b is not None:
            y += b[:, None]
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
        if nb:  # a GEMV with ones: ~3x faster than the pairwise row sum
            gb = g2 @ xp.ones(g2.shape[1], dtype=g2.dtype)
        if nw:
            if kh == kw == 1 and sh == sw == 1:
                cols = xt.reshape(c, n * ho * wo)
            else:
                cols = _cols_cn(xt, kh, kw, sh, sw, ho, wo,
                                _workspace(xp, (c, kh, kw, n, ho, wo), xt.dtype)).reshape(ck, -1)
            gw = (g2 @ cols.T).reshape(w.shape)
        if nx:
            gcols = (w.reshape(cout, ck).T @ g2).reshape(c, kh, kw, n, ho, wo)
            gpad = col2im(gcols, h + 2 * ph, wd + 2 * pw, sh, sw)
            gx = gpad[:, :, ph : ph + h, pw : pw + wd].transpose(1, 0, 2, 3)
        return gx, gw, gb


def conv2d(x: Tensor, weight: Tensor, bias=None, stride=1, padding=0) -> Tensor:
    """2-D convolution (cross-correlation) on NCHW input with an (out, in, kh, kw) weight."""
    if x.ndim != 4:
        raise ValueError(f"conv2d expects NCHW input, got shape {tuple(x.shape)}")
    if x.shape[1] != weight.shape[1]:
        raise ValueError(
            f"conv2d: input of shape {tuple(x.shape)} has {x.shape[1]} channels, weight of "
            f"shape {tuple(weight.shape)} expects {weight.shape[1]}"
            + ("; images channels-last (N, H, W, C)? use X.transpose(0, 3, 1, 2)"
               if x.shape[-1] == weight.shape[1] else "")
        )
    return Conv2dFn.apply(x, weight, bias, stride=_pair(stride, "stride"),
                          padding=_pair(padding, "padding"))


def _cn_view(a):
    """``a`` with axes 0 and 1 swapped when that makes it C-contiguous (conv outputs are
    (N, C, H, W) views of channels-first memory); pools then run on contiguous memory and
    hand back the same kind of view."""
    if a.ndim == 4 and not a.flags.c_contiguous:
        t = a.transpose(1, 0, 2, 3)
        if t.flags.c_contiguous:
            return t, True
    return a, False


def _pool_geom(x, kernel_size, stride):
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride if stride is not None else (kh, kw), "stride")
    n, c, h, w = x.shape
    return kh, kw, sh, sw, (h - kh) // sh + 1, (w - kw) // sw + 1


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
        x, self.swap = _cn_view(x)
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
        x, self.swap = _cn_view(x)
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


def max_pool2d(x: Tensor, kernel_size, stride=None) -> Tensor:
    """Max over (kh, kw) windows of NCHW input (stride defaults to the kernel size)."""
    return MaxPool2dFn.apply(x, geom=_pool_geom(x, kernel_size, stride))


def avg_pool2d(x: Tensor, kernel_size, stride=None) -> Tensor:
    """Mean over (kh, kw) windows of NCHW input (stride defaults to the kernel size)."""
    return AvgPool2dFn.apply(x, geom=_pool_geom(x, kernel_size, stride))


# ---- attention ------------------------------------------------------------------------------
class SDPAFn(Function):
    """softmax(q k^T * scale + causal mask) v over (B, H, T, D); keeps q, k, v, the output
    and the probabilities (B, H, T, S)."""

    def forward(self, q, k, v, causal=True, scale=None):
        xp = xp_of(q)
        t, s = q.shape[-2], k.shape[-2]
        self.scale = scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        # the scale goes on q (T*D work) rather than on the (T, S) scores
        att = (q * q.dtype.type(scale)) @ xp.swapaxes(k, -1, -2)
        if causal:
            # query i sees keys j <= i + (S - T) (the last T of S positions)
            att += xp.triu(xp.full((t, s), -np.inf, dtype=att.dtype), k=s - t + 1)
        att -= att.max(axis=-1, keepdims=True)
        xp.exp(att, out=att)
        att /= att.sum(axis=-1, keepdims=True)
        out = att @ v
        self.save_for_backward(q, k, v, att, out)
        return out

    def backward(self, g):
        q, k, v, p, out = self.saved
        xp = xp_of(g)
        sc = g.dtype.type(self.scale)
        gv = xp.swapaxes(p, -1, -2) @ g
        gp = g @ xp.swapaxes(v, -1, -2)
        # softmax backward in place: gs = p * (gp - rowsum(gp * p)), and
        # rowsum(gp * p) = rowsum(g * out): a (T, D) product instead of a (T, S) one
        gp -= (g * out).sum(axis=-1, keepdims=True)
        gp *= p
        gq = gp @ k
        gq *= sc
        gk = xp.swapaxes(gp, -1, -2) @ q
        gk *= sc
        return gq, gk, gv


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor, causal: bool = True,
                                 scale=None) -> Tensor:
    """Attention over (B, H, T, D) tensors (any leading axes), causal by default."""
    if q.shape[-1] != k.shape[-1] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"attention shapes do not fit: q {tuple(q.shape)}, k {tuple(k.shape)}, "
            f"v {tuple(v.shape)}"
        )
    return SDPAFn.apply(q, k, v, causal=causal, scale=scale)


def packed_causal_attention(q: Tensor, k: Tensor, v: Tensor, cu_seqlens, scale=None) -> Tensor:
    """Causal attention over packed sequences: q, k, v (T_total, H, D), sequence ``i`` is rows
    ``cu_seqlens[i]:cu_seqlens[i+1]``; no query attends across a sequence boundary."""
    from ..packed_attention import packed_attention

    return packed_attention(q, k, v, cu_seqlens, scale=scale)

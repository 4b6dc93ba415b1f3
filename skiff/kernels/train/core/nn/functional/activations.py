"""Activations, softmax, normalisation and dropout as autograd nodes: ``relu``, ``gelu``,
``silu``, ``sigmoid``, ``softmax``, ``log_softmax``, ``layer_norm``, ``rms_norm``,
``batch_norm``, ``dropout``.

``layer_norm`` keeps the normalised input and the reciprocal std (not the input itself); its
math is the fused custom ops in :mod:`..fused`.
"""

from __future__ import annotations

import math

import numpy as np

from ... import half_cast as _hc
from ... import random as _random
from ...autograd import Function, xp_of
from ...gemm import active as gemm_active
from ...layout_r45 import keeps_channels_last
from ...loss_policy import float32_in_mixed
from ...ops_math import Relu, Sigmoid
from ...random import get_generator
from ...tensor import Tensor
from ..fused import gelu_tanh, gelu_tanh_grad, layer_norm_bwd, layer_norm_fwd
from .conv import cn_view

__all__ = ["relu", "gelu", "silu", "sigmoid", "softmax", "log_softmax", "layer_norm", "rms_norm",
           "batch_norm", "dropout"]


def _erf(x):
    xp = xp_of(x)
    if xp is np:
        from scipy.special import erf

        return erf(x)
    import cupyx.scipy.special  # pragma: no cover - GPU

    return cupyx.scipy.special.erf(x)  # pragma: no cover - GPU


# ---- activations ----------------------------------------------------------------------------
def relu(x: Tensor, inplace: bool = False) -> Tensor:
    """``inplace`` is accepted for torch's code; the result is a new tensor."""
    return Relu.apply(x)


def sigmoid(x: Tensor) -> Tensor:
    return Sigmoid.apply(x)


_K = math.sqrt(2.0 / math.pi)


class GeluFn(Function):
    def forward(self, x, approximate="none"):
        self.approximate = approximate
        self.save_for_backward(x)
        if approximate == "tanh":
            return gelu_tanh(x)
        return 0.5 * x * (1 + _erf(x * (1 / math.sqrt(2.0))))

    def backward(self, g):
        (x,) = self.saved
        xp = xp_of(x)
        if self.approximate == "tanh":
            return gelu_tanh_grad(x, xp.ascontiguousarray(g).reshape(g.shape))
        cdf = 0.5 * (1 + _erf(x * (1 / math.sqrt(2.0))))
        pdf = xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        return g * (cdf + x * pdf)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU, exact (with erf) by default as torch's; ``approximate="tanh"``: GPT-2's."""
    if approximate not in ("tanh", "none"):
        raise ValueError(f"approximate must be 'tanh' or 'none', got {approximate!r}")
    out = GeluFn.apply(x, approximate=approximate)
    if out.dtype != x.dtype and x.dtype.itemsize == 2:  # bfloat16 in, bfloat16 out (torch's)
        out = out.to(dtype=x.dtype)
    return out


class SiluFn(Function):
    def forward(self, x):
        xp = xp_of(x)
        s = 1 / (1 + xp.exp(-x))
        self.save_for_backward(x, s)
        return x * s

    def backward(self, g):
        x, s = self.saved
        return g * s * (1 + x * (1 - s))


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    return SiluFn.apply(x)


# ---- softmax --------------------------------------------------------------------------------
class SoftmaxFn(Function):
    def forward(self, x, axis=-1):
        xp = xp_of(x)
        self.axis = axis
        e = x - x.max(axis=axis, keepdims=True)
        if not e.flags.c_contiguous and 0 not in e.strides:  # torch's softmax is row-major
            e = xp.ascontiguousarray(e)  # whatever the input's layout (channels-last kept it:
            # round 45 h17; a meta array, strides 0, stays one)
        xp.exp(e, out=e)
        e /= e.sum(axis=axis, keepdims=True)
        self.save_for_backward(e)
        return e

    def backward(self, g):
        (p,) = self.saved
        gx = g * p
        gx -= p * gx.sum(axis=self.axis, keepdims=True)
        return gx


def _by_rows(fn, out, *arrays, axis):
    """``fn(out_part, *array_parts)`` over pieces along the first axis of numpy arrays
    reduced along their last ``axis``, on the elementwise threads (a row's result does not
    depend on the others, so the split gives the same bits); else one call."""
    if out.ndim < 2 or axis not in (-1, out.ndim - 1) or not isinstance(out, np.ndarray) or \
            any(a.shape != out.shape for a in arrays):
        fn(out, *arrays)
        return
    from skiff.kernels.backend.split import split_rows

    split_rows(lambda lo, hi: fn(out[lo:hi], *(a[lo:hi] for a in arrays)), out.shape[0],
               out.size)


def _log_softmax_rows(out, x, axis=-1):
    xp = xp_of(x)
    xp.subtract(x, x.max(axis=axis, keepdims=True), out=out)
    e = xp.exp(out)
    out -= xp.log(e.sum(axis=axis, keepdims=True))


def _log_softmax_grad_rows(out, s, g, axis=-1):
    xp = xp_of(s)
    xp.exp(s, out=out)
    out *= -g.sum(axis=axis, keepdims=True)
    out += g


class LogSoftmaxFn(Function):
    def forward(self, x, axis=-1):
        xp = xp_of(x)
        self.axis = axis
        s = xp.empty(x.shape, dtype=x.dtype)
        _by_rows(lambda o, a: _log_softmax_rows(o, a, axis), s, x, axis=axis)
        self.save_for_backward(s)
        return s

    def backward(self, g):
        (s,) = self.saved
        xp = xp_of(s)
        gx = xp.empty(s.shape, dtype=s.dtype)
        _by_rows(lambda o, a, b: _log_softmax_grad_rows(o, a, b, self.axis), gx, s, g,
                 axis=self.axis)
        return gx


def softmax(x: Tensor, axis: int = -1, *, dim: int | None = None, dtype=None) -> Tensor:
    """Softmax over ``axis`` (torch's ``dim``); ``dtype`` casts the input first (torch's)."""
    if dtype is not None:
        x = x.astype(dtype)
    return SoftmaxFn.apply(x, axis=axis if dim is None else dim)


@float32_in_mixed
def log_softmax(x: Tensor, axis: int = -1, *, dim: int | None = None, dtype=None) -> Tensor:
    """Log-softmax over ``axis`` (torch's ``dim``); ``dtype`` casts the input first."""
    if dtype is not None:
        x = x.astype(dtype)
    return LogSoftmaxFn.apply(x, axis=axis if dim is None else dim)


# ---- normalisation --------------------------------------------------------------------------
class LayerNormFn(Function):
    """Row-wise layer norm; the math is the fused custom ops in :mod:`..fused`."""

    def forward(self, x, w, b, eps=1e-5):
        c = x.shape[-1]
        y, xhat, rstd = layer_norm_fwd(x.reshape(-1, c), w, b, eps)
        self.shape, self.eps = x.shape, eps
        self.save_for_backward(xhat, rstd, w)
        return y.reshape(x.shape)

    def backward(self, g):
        xhat, rstd, w = self.saved
        g2 = xp_of(g).ascontiguousarray(g.reshape(xhat.shape))
        gx, gw, gb = layer_norm_bwd(g2, xhat, rstd, w)
        _, nw, nb = self.needs_input_grad
        return gx.reshape(self.shape), gw if nw else None, gb if nb else None


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None,  # noqa: A002
               eps: float = 1e-5) -> Tensor:
    """torch's layer normalisation over the last ``len(normalized_shape)`` axes (an int: the
    last axis), then ``* weight + bias`` (each of ``normalized_shape``, or None)."""
    if isinstance(normalized_shape, Tensor) or hasattr(normalized_shape, "dtype"):
        raise TypeError("layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5) "
                        "as torch's: the second argument is the shape normalised over, got an "
                        "array (pass the scale as weight=)")
    shape = ((int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer))
             else tuple(int(n) for n in normalized_shape))
    x = input
    if not shape or tuple(x.shape[x.ndim - len(shape):]) != shape or len(shape) > x.ndim:
        raise ValueError(f"layer_norm over {list(shape)} needs an input ending in that shape, "
                         f"got {tuple(x.shape)}")
    if len(shape) == 1:
        return LayerNormFn.apply(x, weight, bias, eps=eps)
    flat = x.reshape(*x.shape[:x.ndim - len(shape)], -1)
    w = weight.reshape(-1) if weight is not None else None
    b = bias.reshape(-1) if bias is not None else None
    return LayerNormFn.apply(flat, w, b, eps=eps).reshape(*x.shape)


class RMSNormFn(Function):
    """RMS norm over the last axis. A 16-bit input (bfloat16, float16) has its statistics and
    normalised values computed in float32 and rounded once, as torch does (the mean of squares
    summed in 16 bits is off by a few percent); float32/float64 run as they are."""

    def forward(self, x, w, eps=1e-6):
        xp = xp_of(x)
        low = x.dtype.itemsize == 2
        self.low = low and x.dtype
        xs = x.astype(np.float32) if low else x
        rstd = 1.0 / xp.sqrt((xs * xs).mean(axis=-1, keepdims=True) + eps)
        self.eps = eps
        xhat = xs * rstd
        self.save_for_backward(xhat, rstd, w)
        if low:  # x * rstd * w in float32, one rounding (torch's result to the bit)
            return (xhat * w.astype(np.float32) if w is not None else xhat).astype(x.dtype)
        return xhat * w if w is not None else xhat

    def backward(self, g):
        xhat, rstd, w = self.saved
        low = self.low
        if low:
            g = g.astype(np.float32)
        lead = tuple(range(g.ndim - 1))
        gw = (g * xhat).sum(axis=lead) if self.needs_input_grad[1] else None
        gxh = (g * (w.astype(np.float32) if low else w)) if w is not None else g
        gx = None
        if self.needs_input_grad[0]:
            gx = gxh - xhat * (gxh * xhat).mean(axis=-1, keepdims=True)
            gx *= rstd
        if low:
            gx = None if gx is None else gx.astype(low)
            gw = None if gw is None else gw.astype(w.dtype)
        return gx, gw


def rms_norm(x: Tensor, *args, weight=None, eps=None, normalized_shape=None) -> Tensor:
    """RMS normalisation: torch's ``rms_norm(x, normalized_shape, weight=None, eps=None)``
    (over the last ``len(normalized_shape)`` axes; ``eps=None`` is the float eps of the dtype
    it computes in, as torch) or skiff's ``rms_norm(x, weight=None, eps=1e-6)`` (over the
    last axis)."""
    torch_form = normalized_shape is not None or (
        args and isinstance(args[0], (int, tuple, list)) and not isinstance(args[0], bool))
    if torch_form and normalized_shape is None:
        normalized_shape, args = args[0], args[1:]
    if len(args) > 2:
        raise TypeError(f"rms_norm takes at most 4 positional arguments, got {len(args) + 2}")
    if args:
        weight = args[0]
    if len(args) > 1:
        eps = args[1]
    if not torch_form:
        return RMSNormFn.apply(x, weight, eps=1e-6 if eps is None else eps)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(x.shape[x.ndim - len(shape):]) != shape or len(shape) > x.ndim:
        raise ValueError(f"rms_norm: normalized_shape {list(shape)} must be the last axes of "
                         f"the input, got input of shape {tuple(x.shape)}")
    if eps is None:  # torch: the eps of the dtype it computes in (float32 for 16-bit input)
        eps = float(np.finfo(np.float32 if x.dtype.itemsize == 2 else x.dtype).eps)
    if len(shape) == 1:
        return RMSNormFn.apply(x, weight, eps=eps)
    lead = tuple(x.shape[:x.ndim - len(shape)])
    flat = RMSNormFn.apply(x.reshape(*lead, -1), None if weight is None else weight.reshape(-1),
                           eps=eps)
    return flat.reshape(*lead, *shape)


class BatchNormFn(Function):
    """Batch norm over all axes but 1 (channels); eval mode uses the given statistics.

    Works on a 3-D view: (C, 1, M) when the input is a channels-first view (what conv2d
    returns), else (N, C, L); reductions then run over contiguous rows. Backward is one
    expression per element, ``gx = k1 * g + k2 * xhat + k3`` with per-channel k's."""

    def forward(self, x, w, b, mean=None, var=None, eps=1e-5, training=True):
        xp = xp_of(x)
        self.shape, self.training, self.eps = x.shape, training, eps
        # 16-bit input (a bf16 conv's output under autocast, a .bfloat16() model): torch's
        # batch norm computes in float32 and gives the input's dtype back
        self.low = x.dtype if x.dtype.itemsize == 2 else None
        self.wdt = None if w is None else w.dtype
        self.bdt = None if b is None else b.dtype
        if self.low is not None:
            x = _hc.cast(x, np.float32)
            w = None if w is None else w.astype(np.float32)
            b = None if b is None else b.astype(np.float32)
            mean = None if mean is None else mean.astype(np.float32)
            var = None if var is None else var.astype(np.float32)
        xs, self.swap = cn_view(x)
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
            v = _sum_of_products(xp, xc, xc, self.c_axis, axes).reshape(cs)
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
        y = self._out(y)
        return y if self.low is None else _hc.cast(np.ascontiguousarray(y), self.low)

    def _out(self, a3):
        n, c = self.shape[:2]
        if self.swap:
            return a3.reshape((c, n) + self.shape[2:]).transpose(1, 0, 2, 3)
        return a3.reshape(self.shape)

    def backward(self, g):
        xp = xp_of(g)
        xhat, rstd, w = self.saved
        if self.low is not None:
            g = _hc.cast(np.ascontiguousarray(g), np.float32)
        axes, cs = self.axes, self.cs
        nx, nw, nb = self.needs_input_grad[:3]
        g3 = (g.transpose(1, 0, 2, 3) if self.swap else g).reshape(xhat.shape)
        need_stats = nw or (nx and self.training)
        gw = _sum_of_products(xp, g3, xhat, self.c_axis, axes) if need_stats else None
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
        if self.low is not None:
            gx = None if gx is None else _hc.cast(np.ascontiguousarray(gx), self.low)
            gw = gw.astype(self.wdt) if gw is not None and nw else gw
            gb = gb.astype(self.bdt) if gb is not None and nb else gb
        return gx, (gw if nw else None), (gb if nb else None), None, None


def _sum_of_products(xp, a, b, c_axis, axes):
    """sum(a * b) over ``axes`` of (a, b, c)-shaped arrays: an einsum (no temporary), or inside
    a CUDA-graph capture a product and a sum (cupy's einsum calls cuBLAS, which it refuses
    on a capturing stream)."""
    if gemm_active() and xp is not np:
        return (a * b).sum(axis=axes)
    return xp.einsum("abc,abc->" + "abc"[c_axis], a, b)


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=True,
               momentum=0.1, eps=1e-5):
    """Batch normalisation (N, C, ...); in training updates the running statistics in place
    the way torch does (unbiased variance in the running estimate)."""
    if x.size == 0 and x.ndim >= 2:  # an empty batch: an empty result, statistics untouched
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)  # (torch's; zero weight/bias grads)
        out = x * 1.0
        if weight is not None:
            out = out * weight.reshape(shape)
        return out if bias is None else out + bias.reshape(shape)
    if training and x.ndim >= 2 and x.size == x.shape[1]:  # torch's check (a zero variance)
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {tuple(x.shape)}")
    rm = running_mean._data if isinstance(running_mean, Tensor) else running_mean
    rv = running_var._data if isinstance(running_var, Tensor) else running_var
    out = BatchNormFn.apply(x, weight, bias, rm, rv, eps=eps, training=training)
    if training and rm is not None:
        node = out._node
        if node is None:  # no graph: recompute the statistics cheaply
            xd = x._data if isinstance(x, Tensor) else x
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


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def dropout(x: Tensor, p: float = 0.5, training: bool = True, generator=None,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p). torch's
    ``dropout(x, p, training, inplace)``: a bool in the fourth place is ``inplace`` (accepted;
    the result is a new tensor)."""
    if isinstance(generator, bool):
        generator = None
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
    if not training or p == 0.0:
        return x
    if p == 1.0:  # torch's: every element dropped (zeros, zero gradient)
        return x * 0.0
    if _random.batched_draw is not None:  # a batched vmap call, randomness="different"
        mask = _random.batched_draw(lambda rng, shape: _dropout_mask(x.xp, rng, shape, p),
                                    tuple(x.shape), generator)
        if mask is not None:
            return DropoutFn.apply(x, mask, scale=1.0 / (1.0 - p))
    mask = _dropout_mask(x.xp, get_generator(generator), tuple(x.shape), p)
    return DropoutFn.apply(x, mask, scale=1.0 / (1.0 - p))


def _dropout_mask(xp, rng, shape, p):
    if xp is np:
        return rng.random(shape, dtype=np.float32) >= p
    # GPU: draw on the device from a host-derived seed
    state = xp.random.RandomState(int(rng.integers(2**63 - 1)))
    return state.random_sample(shape, dtype=np.float32) >= p

"""Fused CPU kernels for the hottest elementwise/row ops, each a custom op with a plain-``xp``
reference twin (the reference is what runs on a GPU and where numba is missing).

* ``train.layer_norm_fwd(x, w, b, eps) -> (y, xhat, rstd)`` and
  ``train.layer_norm_bwd(g, xhat, rstd, w) -> (gx, gw, gb)`` on (N, C) rows: numpy needs ~6
  passes over memory each way, the numba loops one or two.
* ``train.gelu_tanh_grad(x, g) -> gx``: numpy computes tanh (it is SIMD-vectorised there,
  numba's scalar tanh is 50x slower); one numba pass does the remaining dozen elementwise
  steps.
* ``train.gelu_tanh(x)``: the GELU (tanh form) forward; numpy's seven vectorised passes are
  fast on the CPU, one elementwise kernel on a GPU.
* ``train.sum_squares(*arrays) -> float64 0-d``: the squared L2 norm of many arrays together,
  left on their device (gradient clipping): one BLAS dot each on the CPU.
* ``train.scale_many(*arrays, coef)``: every array scaled in place (clipping's rescale).
* ``train.clip_many(sumsq, *arrays, max_norm)``: clipping's rescale with the squared norm left
  on the device (``sum_squares``' 0-d array): nothing waits for a GPU to hand the norm back.
* ``train.scatter_rows(target, index, values)``: rows added at (repeated) indices, the
  embedding's backward: numpy's ``add.at`` is a slow generic loop.
* ``train.col2im(gcols, hp, wp, sh, sw) -> gpad``: sums (C, kh, kw, N, Ho, Wo) column
  gradients into a padded (C, N, Hp, Wp) image; numpy makes kh*kw strided read-add-write
  passes over the whole image, the numba loop one pass over the columns.
* ``train.max_pool_bwd(g, arg, h, w, kh, kw, sh, sw) -> gx``: routes each output gradient to
  its window's recorded max offset; numpy needs a compare and a multiply per offset.

Measured on gpt-mini (B=16, T=128, 1 thread) these cut ~10 ms of a ~160 ms training step.
The GPU twins (CUDA, in :mod:`.fused_gpu`) are one to three launches where the references are a
dozen cupy calls.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from skiff.kernels.backend import custom_op, numba_available
from skiff.kernels.backend.split import split_rows

from ..autograd import xp_of

__all__ = ["layer_norm_fwd", "layer_norm_bwd", "gelu_tanh", "gelu_tanh_grad", "sum_squares",
           "scale_many", "clip_many", "CLIP_EPS", "scatter_rows", "col2im", "max_pool_bwd",
           "warm_up", "GELU_K", "GELU_A"]

GELU_K = math.sqrt(2.0 / math.pi)
GELU_A = 0.044715


# ---- layer norm ------------------------------------------------------------------------------
@custom_op("train.layer_norm_fwd")
def layer_norm_fwd(x, w, b, eps):
    """Rows of ``x`` (N, C) normalised, scaled by ``w`` and shifted by ``b`` (either may be
    None). Returns ``(y, xhat, rstd)`` with rstd (N, 1)."""
    xp = xp_of(x)
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    rstd = 1.0 / xp.sqrt(var + eps)
    xc *= rstd
    y = xc * w if w is not None else xc.copy()
    if b is not None:
        y += b
    return y, xc, rstd


@custom_op("train.layer_norm_bwd")
def layer_norm_bwd(g, xhat, rstd, w):
    """Gradients of :func:`layer_norm_fwd` for (N, C) rows: ``(gx, gw, gb)``."""
    gw = (g * xhat).sum(axis=0)
    gb = g.sum(axis=0)
    gxh = g * w if w is not None else g
    gx = gxh - gxh.mean(axis=-1, keepdims=True)
    gx -= xhat * (gxh * xhat).mean(axis=-1, keepdims=True)
    gx *= rstd
    return gx, gw, gb


@functools.lru_cache(maxsize=1)
def _ln_kernels():
    import numba

    @numba.njit(cache=True, fastmath=True, error_model="numpy")  # 1/0: inf, as torch
    def fwd(x, w, b, eps, y, xhat, rstd):  # pragma: no cover - compiled
        n, c = x.shape
        for i in range(n):
            s = 0.0
            for j in range(c):
                s += x[i, j]
            mu = s / c
            v = 0.0
            for j in range(c):
                d = x[i, j] - mu
                v += d * d
            r = 1.0 / math.sqrt(v / c + eps)
            rstd[i, 0] = r
            for j in range(c):
                h = (x[i, j] - mu) * r
                xhat[i, j] = h
                y[i, j] = h * w[j] + b[j]

    @numba.njit(cache=True, fastmath=True)
    def bwd(g, xhat, rstd, w, gx, gw, gb):  # pragma: no cover - compiled
        n, c = g.shape
        for i in range(n):
            m1 = 0.0
            m2 = 0.0
            for j in range(c):
                gi = g[i, j]
                h = xhat[i, j]
                gh = gi * w[j]
                m1 += gh
                m2 += gh * h
                gw[j] += gi * h
                gb[j] += gi
            m1 /= c
            m2 /= c
            r = rstd[i, 0]
            for j in range(c):
                gx[i, j] = r * (g[i, j] * w[j] - m1 - xhat[i, j] * m2)

    return fwd, bwd


def _numba_ok(*arrays) -> bool:
    return all(a is None or (type(a) is np.ndarray and a.flags.c_contiguous
                             and a.dtype in (np.float32, np.float64)) for a in arrays)


@layer_norm_fwd.implement("cpu", "numba", available=numba_available)
def _ln_fwd_numba(x, w, b, eps):
    if not _numba_ok(x, w, b) or x.ndim != 2:
        return layer_norm_fwd.reference(x, w, b, eps)
    n, c = x.shape
    dt = x.dtype
    w_ = w if w is not None else np.ones(c, dtype=dt)
    b_ = b if b is not None else np.zeros(c, dtype=dt)
    y, xhat = np.empty_like(x), np.empty_like(x)
    rstd = np.empty((n, 1), dtype=dt)
    _ln_kernels()[0](x, w_, b_, float(eps), y, xhat, rstd)
    return y, xhat, rstd


@layer_norm_bwd.implement("cpu", "numba", available=numba_available)
def _ln_bwd_numba(g, xhat, rstd, w):
    if not _numba_ok(g, xhat, rstd, w) or g.ndim != 2:
        return layer_norm_bwd.reference(g, xhat, rstd, w)
    n, c = g.shape
    w_ = w if w is not None else np.ones(c, dtype=g.dtype)
    gx = np.empty_like(g)
    gw, gb = np.zeros(c), np.zeros(c)  # float64 accumulators over rows
    _ln_kernels()[1](g, xhat, rstd, w_, gx, gw, gb)
    return gx, gw.astype(g.dtype), gb.astype(g.dtype)


# ---- GELU (tanh) backward --------------------------------------------------------------------
def _gelu_tanh(x):
    """tanh(K (x + A x^3)) with one allocation."""
    xp = xp_of(x)
    u = xp.asarray(x * x)  # numpy turns 0-d products into scalars; keep an array
    u *= GELU_A
    u += 1
    u *= x
    u *= GELU_K
    return xp.tanh(u, out=u)


@custom_op("train.gelu_tanh")
def gelu_tanh(x):
    """0.5 x (1 + tanh(K (x + A x^3))) (GPT-2's GELU)."""
    t = _gelu_tanh(x)
    t += 1
    t *= x
    t *= 0.5
    return t


@custom_op("train.sum_squares")
def sum_squares(*arrays):
    """Sum of the squares of every element of ``arrays`` as a float64 0-d array on their
    device (one BLAS dot per array; nothing waits for a GPU)."""
    xp = xp_of(arrays[0])
    total = xp.zeros((), dtype=np.float64)
    for a in arrays:
        f = a.reshape(-1)
        total = total + xp.asarray(xp.vdot(f, f)).real.astype(np.float64)
    return total


@custom_op("train.scale_many")
def scale_many(*arrays, coef: float):
    """Every array ``*= coef`` in place (in its own dtype); returns them."""
    for a in arrays:
        a *= a.dtype.type(coef)
    return arrays


CLIP_EPS = 1e-6  # clip_grad_norm_'s (torch's): max_norm / (norm + eps)


@custom_op("train.clip_many")
def clip_many(sumsq, *arrays, max_norm: float):
    """Every array ``*= max_norm / (sqrt(sumsq) + CLIP_EPS)`` in place when that is below 1
    and ``sumsq`` (a float64 0-d array on the arrays' device) is finite; returns them. The
    factor is chosen on the device (a multiply by 1 where nothing is clipped), so no value
    is read back to the host."""
    xp = xp_of(sumsq)
    coef = max_norm / (xp.sqrt(sumsq) + CLIP_EPS)
    coef = xp.where(xp.isfinite(sumsq) & (coef < 1.0), coef, 1.0)
    for a in arrays:
        a *= coef.astype(a.dtype)
    return arrays


@custom_op("train.gelu_tanh_grad")
def gelu_tanh_grad(x, g):
    """d/dx [0.5 x (1 + tanh(K (x + A x^3)))] * g."""
    t = _gelu_tanh(x)
    # 0.5 (1 + t) + 0.5 x (1 - t^2) K (1 + 3 A x^2)
    d = xp_of(x).asarray(t * t)
    d -= 1
    d *= x
    d *= -0.5 * GELU_K
    p = x * x  # (a scalar for 0-d input; only used out of place below)
    p = p * (3 * GELU_A) + 1
    d *= p
    t += 1
    t *= 0.5
    d += t
    d *= g
    return d


def _exp_neg_2u(x):
    """exp(-2 K (x + A x^3)) with one allocation (overflow to inf is meant: it gives s = 0)."""
    e = np.multiply(x, x)
    e *= -2.0 * GELU_K * GELU_A
    e += -2.0 * GELU_K
    e *= x
    with np.errstate(over="ignore"):
        return np.exp(e, out=e)


@gelu_tanh.implement("cpu", "numpy-sigmoid")
def _gelu_sigmoid(x):
    """x / (1 + exp(-2u)), the same function (0.5 (1 + tanh u) = sigmoid(2u)): numpy's exp is
    SIMD on AVX2 where its tanh is a scalar loop (1.7 against 3.0 ms per million floats)."""
    if type(x) is not np.ndarray or x.dtype not in (np.float32, np.float64) or x.ndim == 0:
        return gelu_tanh.reference(x)
    e = _exp_neg_2u(x)
    e += 1
    return np.divide(x, e, out=e)


@functools.lru_cache(maxsize=1)
def _gelu_kernel():
    import numba

    @numba.njit(cache=True, fastmath=True)
    def grad(x, s, g, out):  # pragma: no cover - compiled
        # with s = sigmoid(2u) = 0.5 (1 + tanh u): 1 - tanh^2 u = 4 s (1 - s)
        for i in range(x.size):
            xi = x[i]
            si = s[i]
            out[i] = g[i] * (si + 2.0 * xi * si * (1.0 - si) * GELU_K
                             * (1.0 + 3.0 * GELU_A * xi * xi))

    return grad


@gelu_tanh_grad.implement("cpu", "numba", available=numba_available)
def _gelu_grad_numba(x, g):
    if not _numba_ok(x, g) or x.shape != g.shape or x.dtype != g.dtype or x.ndim == 0:
        return gelu_tanh_grad.reference(x, g)
    s = _exp_neg_2u(x)
    s += 1
    np.reciprocal(s, out=s)
    _gelu_kernel()(x.reshape(-1), s.reshape(-1), g.reshape(-1), s.reshape(-1))
    return s


# ---- rows added at indices (embedding backward) ----------------------------------------------
@custom_op("train.scatter_rows")
def scatter_rows(target, index, values):
    """``target[index[i]] += values[i]`` for rows, repeated indices accumulated (in place;
    returns target). numpy's ``np.add.at`` takes ~1.5 ms for gpt-mini's 2048 token rows, the
    numba loop ~0.1 ms."""
    from ..ops_shape import scatter_add

    return scatter_add(target, index, values)


@functools.lru_cache(maxsize=1)
def _scatter_kernel():
    import numba

    @numba.njit(cache=True, nogil=True)
    def rows(target, index, values):  # pragma: no cover - compiled
        n, c = values.shape
        for i in range(n):
            r = index[i]
            for j in range(c):
                target[r, j] += values[i, j]

    return rows


@scatter_rows.implement("cpu", "numba", available=numba_available)
def _scatter_rows_numba(target, index, values):
    n = len(target)
    if (not _numba_ok(target, values) or target.ndim != 2 or values.ndim != 2
            or index.ndim != 1 or index.dtype.kind not in "iu" or values.dtype != target.dtype
            or values.shape != (len(index), target.shape[1])):
        return scatter_rows.reference(target, index, values)
    if len(index) and (int(index.min()) < -n or int(index.max()) >= n):
        return scatter_rows.reference(target, index, values)  # numpy's IndexError, as before
    idx = np.where(index < 0, index + n, index).astype(np.int64, copy=False)
    _scatter_kernel()(target, idx, values)
    return target


# ---- convolution / pooling backward ------------------------------------------------------
@custom_op("train.col2im")
def col2im(gcols, hp, wp, sh, sw):
    """(C, kh, kw, N, Ho, Wo) column gradients -> (C, N, hp, wp) image gradient (sums where
    windows overlap)."""
    xp = xp_of(gcols)
    c, kh, kw, n, ho, wo = gcols.shape
    gpad = xp.zeros((c, n, hp, wp), dtype=gcols.dtype)
    for i in range(kh):
        for j in range(kw):
            gpad[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw] += gcols[:, i, j]
    return gpad


@custom_op("train.max_pool_bwd")
def max_pool_bwd(g, arg, h, w, kh, kw, sh, sw):
    """Gradient of a max pool: ``g`` (A, B, Ho, Wo) goes to offset ``arg`` (row-major index
    into the kh x kw window) of each window of the (A, B, h, w) input."""
    xp = xp_of(g)
    a, b, ho, wo = g.shape
    covered = kh == sh and kw == sw and h == sh * ho and w == sw * wo
    gx = (xp.empty if covered else xp.zeros)((a, b, h, w), dtype=g.dtype)
    overlap = kh > sh or kw > sw
    for i in range(kh):
        for j in range(kw):
            dst = gx[:, :, i : i + sh * ho : sh, j : j + sw * wo : sw]
            hit = arg == i * kw + j
            if overlap:
                dst += g * hit
            else:
                xp.multiply(g, hit, out=dst)
    return gx


@functools.lru_cache(maxsize=1)
def _conv_kernels():
    import numba

    @numba.njit(cache=True, fastmath=True, nogil=True)
    def c2i(gc, sh, sw, out):  # pragma: no cover - compiled
        # one (c, n) image plane stays in L1 while all kh*kw offsets add into it; rows are
        # contiguous slices so the unit-stride loop vectorises (3x the numpy passes at 3x3)
        c_, kh, kw, n_, ho, wo = gc.shape
        for c in range(c_):
            for n in range(n_):
                for i in range(kh):
                    for j in range(kw):
                        for y in range(ho):
                            orow = out[c, n, y * sh + i]
                            grow = gc[c, i, j, n, y]
                            if sw == 1:
                                for x in range(wo):
                                    orow[x + j] += grow[x]
                            else:
                                for x in range(wo):
                                    orow[x * sw + j] += grow[x]

    @numba.njit(cache=True)
    def mpb(g, arg, kw, sh, sw, out):  # pragma: no cover - compiled
        a_, b_, ho, wo = g.shape
        for a in range(a_):
            for b in range(b_):
                for y in range(ho):
                    for x in range(wo):
                        q = arg[a, b, y, x]
                        i = q // kw
                        out[a, b, y * sh + i, x * sw + q - i * kw] += g[a, b, y, x]

    return c2i, mpb


@col2im.implement("cpu", "numba", available=numba_available)
def _col2im_numba(gcols, hp, wp, sh, sw):
    if not _numba_ok(gcols):
        return col2im.reference(gcols, hp, wp, sh, sw)
    c, kh, kw, n, ho, wo = gcols.shape
    gpad = np.zeros((c, n, hp, wp), dtype=gcols.dtype)
    c2i = _conv_kernels()[0]
    # per channel: pieces of channels on the elementwise threads (numba, without the GIL)
    split_rows(lambda lo, hi: c2i(gcols[lo:hi], sh, sw, gpad[lo:hi]), c, gcols.size)
    return gpad


@max_pool_bwd.implement("cpu", "numba", available=numba_available)
def _max_pool_bwd_numba(g, arg, h, w, kh, kw, sh, sw):
    g = np.ascontiguousarray(g)
    if not _numba_ok(g) or arg.dtype != np.int8 or not arg.flags.c_contiguous:
        return max_pool_bwd.reference(g, arg, h, w, kh, kw, sh, sw)
    a, b = g.shape[:2]
    gx = np.zeros((a, b, h, w), dtype=g.dtype)
    _conv_kernels()[1](g, arg, kw, sh, sw, gx)
    return gx


def warm_up() -> None:
    """Compile (or load from numba's cache) every fast kernel here on tiny float32 and float64
    inputs, so a later measurement does not include compilation."""
    for dt in (np.float32, np.float64):
        x = np.ones((2, 3), dtype=dt)
        w = np.ones(3, dtype=dt)
        _, xhat, rstd = layer_norm_fwd(x, w, w, 1e-5)
        layer_norm_bwd(x, xhat, rstd, w)
        gelu_tanh_grad(x, x)
        g4 = np.ones((1, 1, 2, 2), dtype=dt)
        col2im(np.ones((1, 2, 2, 1, 2, 2), dtype=dt), 3, 3, 1, 1)
        max_pool_bwd(g4, np.zeros((1, 1, 2, 2), dtype=np.int8), 4, 4, 2, 2, 2, 2)


# ---- GPU twins -------------------------------------------------------------------------------
# The CUDA twins live in .fused_gpu, which imports this module to register them; dispatch
# imports it the first time one of these ops meets GPU arrays (so the dependency is one-way).
for _op in (layer_norm_fwd, layer_norm_bwd, gelu_tanh, gelu_tanh_grad, sum_squares, scale_many,
            clip_many):
    _op.implement_in("gpu", "skiff.kernels.train.core.nn.fused_gpu")
del _op

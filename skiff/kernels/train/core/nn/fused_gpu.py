"""GPU twins of the fused training ops of :mod:`.fused` and ``optim.adamw_many``: ``fused.cu``
as one cupy RawModule (layer norm forward and backward; AdamW, clipping's sum of squares and
rescale over all parameters at once) and two cupy elementwise kernels (GELU-tanh and its
gradient).

On the GPU the references are a dozen small cupy launches each (a reduction costs tens of
microseconds of host time in cupy); these are one to three. :mod:`.fused` names this module
with :meth:`~skiff.kernels.backend.CustomOp.implement_in`, so it is imported at the first
GPU call and cupy only through :func:`skiff.kernels.backend.cupy`.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from skiff.kernels.backend import cupy, gpu_available

from .. import optim
from . import fused

__all__ = ["SOURCE", "KERNELS", "module"]

SOURCE = Path(__file__).with_name("fused.cu").read_text()
KERNELS = [f"{k}_{s}" for k in ("ln_fwd", "ln_bwd_rows", "ln_bwd_cols", "ln_bwd_finish",
                                 "adamw_many", "sumsq_many", "scale_many", "clip_many",
                                 "adamw_guarded")
           for s in ("f32", "f64")]
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
COLS_Y = 8  # as in fused.cu
_ROWS_PER_CHUNK = 256
_MAX_CHUNKS = 128


@functools.lru_cache(maxsize=1)
def module():  # pragma: no cover - GPU
    return cupy().RawModule(code=SOURCE, options=("--std=c++14",))


def _row_block(c: int) -> int:
    """Threads per row: a multiple of 32 covering the row in a few strides, at most 512."""
    return int(min(512, max(32, 32 * ((min(c, 512) + 31) // 32))))


def _fast(*arrays) -> bool:
    """Every array (None allowed) C-contiguous float32/float64 of the first one's type."""
    dt = arrays[0].dtype
    return dt in _SUFFIX and all(a is None or (a.dtype == dt and a.flags.c_contiguous)
                                 for a in arrays)


@fused.layer_norm_fwd.implement("gpu", "cuda", available=gpu_available)
def _ln_fwd_gpu(x, w, b, eps):  # pragma: no cover - GPU
    if x.ndim != 2 or not _fast(x, w, b) or x.size == 0:
        return fused.layer_norm_fwd.reference(x, w, b, eps)
    cp = cupy()
    n, c = x.shape
    w_ = w if w is not None else cp.ones(c, dtype=x.dtype)
    b_ = b if b is not None else cp.zeros(c, dtype=x.dtype)
    y, xhat = cp.empty_like(x), cp.empty_like(x)
    rstd = cp.empty((n, 1), dtype=x.dtype)
    module().get_function(f"ln_fwd_{_SUFFIX[x.dtype]}")(
        (n,), (_row_block(c),), (x, w_, b_, y, xhat, rstd, np.int32(n), np.int32(c),
                                 np.float64(eps)))
    return y, xhat, rstd


@fused.layer_norm_bwd.implement("gpu", "cuda", available=gpu_available)
def _ln_bwd_gpu(g, xhat, rstd, w):  # pragma: no cover - GPU
    if (g.ndim != 2 or g.shape != xhat.shape or not _fast(g, xhat, rstd, w) or g.size == 0
            or rstd.size != g.shape[0]):
        return fused.layer_norm_bwd.reference(g, xhat, rstd, w)
    cp = cupy()
    n, c = g.shape
    sfx = _SUFFIX[g.dtype]
    w_ = w if w is not None else cp.ones(c, dtype=g.dtype)
    gx = cp.empty_like(g)
    mod = module()
    mod.get_function(f"ln_bwd_rows_{sfx}")(
        (n,), (_row_block(c),), (g, xhat, rstd, w_, gx, np.int32(n), np.int32(c)))
    per = max(_ROWS_PER_CHUNK, -(-n // _MAX_CHUNKS))
    chunks = -(-n // per)
    part = cp.empty((2, chunks, c), dtype=cp.float64)
    mod.get_function(f"ln_bwd_cols_{sfx}")(
        ((c + 31) // 32, chunks), (32, COLS_Y),
        (g, xhat, part, np.int32(n), np.int32(c), np.int32(per)))
    gw, gb = cp.empty(c, dtype=g.dtype), cp.empty(c, dtype=g.dtype)
    mod.get_function(f"ln_bwd_finish_{sfx}")(
        ((c + 127) // 128,), (128,), (part, gw, gb, np.int32(c), np.int32(chunks)))
    return gx, gw, gb


# ---- multi-tensor kernels: one launch for all the tensors of one float type ----------------
def _meta(cp, tensors, doubles=()):
    """The table the *_many kernels read (fused.cu): offsets, pointers, doubles as int64."""
    sizes = [group[0].size for group in tensors]
    offsets = np.zeros(len(tensors) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(sizes)
    ptrs = np.array([[a.data.ptr for a in group] for group in tensors], dtype=np.uint64)
    words = [offsets, ptrs.reshape(-1).view(np.int64)]
    if len(doubles):
        words.append(np.asarray(doubles, dtype=np.float64).reshape(-1).view(np.int64))
    return cp.asarray(np.concatenate(words)), int(offsets[-1])


def _grid(total: int) -> tuple:
    return (int(min(4096, max(1, -(-total // 256)))),)


def _by_dtype(groups):
    """{suffix: [group, ...]} for the groups whose arrays are all C-contiguous of one float
    type; the others in ``rest``."""
    out, rest = {}, []
    for group in groups:
        dt = group[0].dtype
        if dt in _SUFFIX and all(a.dtype == dt and a.flags.c_contiguous for a in group):
            if group[0].size:
                out.setdefault(_SUFFIX[dt], []).append(group)
        else:
            rest.append(group)
    return out, rest


@fused.sum_squares.implement("gpu", "cuda", available=gpu_available)
def _sum_squares_gpu(*arrays):  # pragma: no cover - GPU
    cp = cupy()
    out = cp.zeros((), dtype=cp.float64)
    fast, rest = _by_dtype([(a,) for a in arrays])
    for sfx, groups in fast.items():
        meta, total = _meta(cp, groups)
        module().get_function(f"sumsq_many_{sfx}")(
            _grid(total), (256,), (meta, np.int32(len(groups)), out))
    for (a,) in rest:
        out += fused.sum_squares.reference(a)
    return out


@fused.scale_many.implement("gpu", "cuda", available=gpu_available)
def _scale_many_gpu(*arrays, coef):  # pragma: no cover - GPU
    cp = cupy()
    fast, rest = _by_dtype([(a,) for a in arrays])
    for sfx, groups in fast.items():
        meta, total = _meta(cp, groups)
        module().get_function(f"scale_many_{sfx}")(
            _grid(total), (256,), (meta, np.int32(len(groups)), np.float64(coef)))
    fused.scale_many.reference(*(a for (a,) in rest), coef=coef)
    return arrays


@fused.clip_many.implement("gpu", "cuda", available=gpu_available)
def _clip_many_gpu(sumsq, *arrays, max_norm):  # pragma: no cover - GPU
    cp = cupy()
    status = cp.zeros(2, dtype=cp.float64)  # clip_many reads the sum of squares at [1]
    status[1] = sumsq  # a copy on the device
    fast, rest = _by_dtype([(a,) for a in arrays])
    for sfx, groups in fast.items():
        meta, total = _meta(cp, groups)
        module().get_function(f"clip_many_{sfx}")(
            _grid(total), (256,), (meta, np.int32(len(groups)), status,
                                   np.float64(max_norm), np.float64(fused.CLIP_EPS)))
    fused.clip_many.reference(sumsq, *(a for (a,) in rest), max_norm=max_norm)
    return arrays


@optim.adamw_many.implement("gpu", "cuda", available=gpu_available)
def _adamw_many_gpu(*arrays, lr, beta1, beta2, eps, weight_decay, steps):  # pragma: no cover
    cp = cupy()
    groups = [arrays[i:i + 4] for i in range(0, len(arrays), 4)]
    step_of = {id(g): s for g, s in zip(groups, steps)}
    fast, rest = _by_dtype(groups)
    for sfx, gs in fast.items():
        doubles = [(lr / (1 - beta1 ** step_of[id(g)]), math.sqrt(1 - beta2 ** step_of[id(g)]))
                   for g in gs]
        meta, total = _meta(cp, gs, doubles)
        module().get_function(f"adamw_many_{sfx}")(
            _grid(total), (256,), (meta, np.int32(len(gs)), np.float64(1.0 - lr * weight_decay),
                                   np.float64(beta1), np.float64(beta2), np.float64(eps)))
    for g in rest:  # mixed float types (a float64 gradient on float32 weights): one by one
        optim.adamw_update(*g, lr, beta1, beta2, eps, weight_decay, step_of[id(g)])
    return tuple(a for g in groups for a in (g[0], g[2], g[3]))


@functools.lru_cache(maxsize=1)
def _gelu_kernels():  # pragma: no cover - GPU
    cp = cupy()
    k, a = repr(fused.GELU_K), repr(fused.GELU_A)
    fwd = cp.ElementwiseKernel(
        "T x", "T y",
        f"double xi = x; y = (T)(0.5 * xi * (1.0 + tanh({k} * (xi + {a} * xi * xi * xi))));",
        "skiff_gelu_tanh")
    grad = cp.ElementwiseKernel(
        "T x, T g", "T out",
        f"""double xi = x;
        double t = tanh({k} * (xi + {a} * xi * xi * xi));
        out = (T)((double)g * (0.5 * (1.0 + t)
                  + 0.5 * xi * (1.0 - t * t) * {k} * (1.0 + 3.0 * {a} * xi * xi)));""",
        "skiff_gelu_tanh_grad")
    return fwd, grad


@fused.gelu_tanh.implement("gpu", "cuda", available=gpu_available)
def _gelu_gpu(x):  # pragma: no cover - GPU
    if x.dtype not in _SUFFIX:
        return fused.gelu_tanh.reference(x)
    return _gelu_kernels()[0](x, cupy().empty_like(x))


@fused.gelu_tanh_grad.implement("gpu", "cuda", available=gpu_available)
def _gelu_grad_gpu(x, g):  # pragma: no cover - GPU
    if x.dtype not in _SUFFIX or g.dtype != x.dtype or g.shape != x.shape:
        return fused.gelu_tanh_grad.reference(x, g)
    return _gelu_kernels()[1](x, g, cupy().empty_like(x))

"""Packed variable-length causal attention: sequences of different lengths in one token stream.

q, k, v are (T_total, H, D); ``cu_seqlens`` (B+1 integers, 0 = cu[0] <= cu[1] <= ... = T_total)
marks sequence ``s`` as rows ``cu[s]:cu[s+1]``. A query attends to the keys of its own sequence
at or before its position and never across a boundary, so a packed batch does the work of
``sum(L_s^2)`` instead of the ``B * max(L)^2`` of a padded one.

Two custom ops carry the math (each with a plain-``xp`` reference twin that is also the CPU
implementation):

* ``train.packed_attention_fwd(q, k, v, cu, scale) -> (o, lse)``
* ``train.packed_attention_bwd(q, k, v, o, lse, do, cu, scale) -> (dq, dk, dv)``

Backward keeps only q, k, v, o and the per-row log-sum-exp and recomputes the probabilities
(flash-attention style), so the saved state is O(T) rather than O(sum L^2).

The CPU reference does one batched GEMM over heads per sequence (BLAS does the work; a numba
loop nest would do the same O(L^2 D) flops without BLAS blocking and loses, so there is no
numba twin). On a GPU the fused RawKernels in ``packed_attention.cu`` run one thread per
(row, head) with an online softmax.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from skiff.kernels.backend import cupy, custom_op, to_numpy

from .autograd import Function, xp_of

__all__ = [
    "packed_attention",
    "packed_attention_fwd",
    "packed_attention_bwd",
    "check_cu_seqlens",
    "CUDA_SOURCE",
]

CUDA_SOURCE = Path(__file__).with_name("packed_attention.cu")


def check_cu_seqlens(cu_seqlens, total: int) -> np.ndarray:
    """``cu_seqlens`` as a host int64 array, checked against ``total`` rows."""
    data = getattr(cu_seqlens, "_data", cu_seqlens)  # a Tensor's array, or the array itself
    cu = np.asarray(to_numpy(data)).astype(np.int64, copy=False)
    if cu.ndim != 1 or cu.size < 2:
        raise ValueError(f"cu_seqlens must be 1-D with at least 2 entries, got shape {cu.shape}")
    if cu[0] != 0 or cu[-1] != total or np.any(np.diff(cu) < 0):
        raise ValueError(
            f"cu_seqlens must rise from 0 to the number of tokens {total}, got {cu.tolist()}"
        )
    return cu


def _causal_bias(xp, n, dtype):
    """(n, n) additive mask: 0 on and below the diagonal, -inf above (slice it for shorter)."""
    return xp.triu(xp.full((n, n), -np.inf, dtype=dtype), k=1)


def _heads_first(xp, x):
    """(T, H, D) -> contiguous (H, T, D): per-sequence slices are then BLAS-ready views."""
    return xp.ascontiguousarray(x.transpose(1, 0, 2))


def _scaled_heads_first(xp, x, scale):
    """``scale * x`` as a new contiguous (H, T, D) array (never a view of ``x``: with one head,
    or one row, the transpose is already contiguous and scaling it in place would change the
    caller's q)."""
    out = xp.empty((x.shape[1], x.shape[0], x.shape[2]), dtype=x.dtype)
    xp.multiply(x.transpose(1, 0, 2), x.dtype.type(scale), out=out)
    return out


def _spans(cu):
    return [(int(a), int(b)) for a, b in zip(cu[:-1], cu[1:]) if b > a]


@custom_op("train.packed_attention_fwd")
def packed_attention_fwd(q, k, v, cu, scale):
    """Reference forward: per sequence, one batched (H, L, L) softmax-attention."""
    xp = xp_of(q)
    total, h, d = q.shape
    spans = _spans(cu)
    qh = _scaled_heads_first(xp, q, scale)  # the scale folded into q: T*D work, not L*L
    kh, vh = _heads_first(xp, k), _heads_first(xp, v)
    oh = xp.empty((h, total, d), dtype=q.dtype)
    lse = xp.empty((h, total), dtype=q.dtype)
    if spans:
        bias = _causal_bias(xp, max(b - a for a, b in spans), q.dtype)
    for a, b in spans:
        n = b - a
        att = xp.matmul(qh[:, a:b], kh[:, a:b].transpose(0, 2, 1))  # (H, L, L)
        att += bias[:n, :n]
        m = att.max(axis=-1, keepdims=True)
        att -= m
        xp.exp(att, out=att)
        denom = att.sum(axis=-1, keepdims=True)
        out = oh[:, a:b]
        xp.matmul(att, vh[:, a:b], out=out)
        out /= denom
        xp.log(denom, out=denom)
        denom += m
        lse[:, a:b] = denom[..., 0]
    # (T, H, D) views of the heads-first results; consumers reshape (and so copy) anyway
    return oh.transpose(1, 0, 2), lse.T


@custom_op("train.packed_attention_bwd")
def packed_attention_bwd(q, k, v, o, lse, do, cu, scale):
    """Reference backward: recompute P from the log-sum-exp, then the usual chain."""
    xp = xp_of(q)
    total, h, d = q.shape
    spans = _spans(cu)
    sc = q.dtype.type(scale)
    qh = _scaled_heads_first(xp, q, sc)
    kh, vh, doh = (_heads_first(xp, x) for x in (k, v, do))
    lse_h = xp.ascontiguousarray(lse.T)[..., None]  # (H, T, 1)
    delta = (do * o).sum(axis=-1).T[..., None]  # (H, T, 1)
    dqh, dkh, dvh = (xp.zeros((h, total, d), dtype=q.dtype) for _ in range(3))
    if spans:
        bias = _causal_bias(xp, max(b - a for a, b in spans), q.dtype)
    for a, b in spans:
        n = b - a
        qs, ks, vs, dos = qh[:, a:b], kh[:, a:b], vh[:, a:b], doh[:, a:b]
        p = xp.matmul(qs, ks.transpose(0, 2, 1))
        p += bias[:n, :n]
        p -= lse_h[:, a:b]
        xp.exp(p, out=p)  # (H, L, L), zero above the diagonal
        xp.matmul(p.transpose(0, 2, 1), dos, out=dvh[:, a:b])
        dp = xp.matmul(dos, vs.transpose(0, 2, 1))
        dp -= delta[:, a:b]
        dp *= p  # dS / scale
        xp.matmul(dp, ks, out=dqh[:, a:b])
        xp.matmul(dp.transpose(0, 2, 1), qs, out=dkh[:, a:b])  # qs carries the scale
    dqh *= sc
    return dqh.transpose(1, 0, 2), dkh.transpose(1, 0, 2), dvh.transpose(1, 0, 2)


# ---- GPU: fused RawKernels ------------------------------------------------------------------
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_MAX_D = 128
_BLOCK = 128


@functools.lru_cache(maxsize=1)
def _module():  # pragma: no cover - GPU
    return cupy().RawModule(code=CUDA_SOURCE.read_text(), options=("-std=c++14",))


def _gpu_ok(q, *others) -> bool:
    """The kernels read every array as q's float type: all must share it."""
    return (q.dtype in _SUFFIX and q.shape[-1] <= _MAX_D
            and all(x.dtype == q.dtype for x in others))


def _seq_of(cp, cu):  # pragma: no cover - GPU
    seq = np.repeat(np.arange(len(cu) - 1, dtype=np.int32), np.diff(cu))
    return cp.asarray(cu.astype(np.int32)), cp.asarray(seq)


@packed_attention_fwd.implement("gpu", "cupy-rawkernel", available=lambda: cupy() is not None)
def _fwd_gpu(q, k, v, cu, scale):  # pragma: no cover - GPU
    if not _gpu_ok(q, k, v):
        return packed_attention_fwd.reference(q, k, v, cu, scale)
    cp = cupy()
    q, k, v = (cp.ascontiguousarray(x) for x in (q, k, v))
    total, h, d = q.shape
    o = cp.empty_like(q)
    lse = cp.empty((total, h), dtype=q.dtype)
    if total * h == 0:  # a zero-size grid is an invalid launch
        return o, lse
    cu_d, seq = _seq_of(cp, cu)
    fn = _module().get_function(f"packed_attn_fwd_{_SUFFIX[q.dtype]}")
    n = total * h
    sc = q.dtype.type(scale)
    fn(((n + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
       (q, k, v, cu_d, seq, o, lse, np.int32(total), np.int32(h), np.int32(d), sc))
    return o, lse


@packed_attention_bwd.implement("gpu", "cupy-rawkernel", available=lambda: cupy() is not None)
def _bwd_gpu(q, k, v, o, lse, do, cu, scale):  # pragma: no cover - GPU
    if not _gpu_ok(q, k, v, o, lse, do):
        return packed_attention_bwd.reference(q, k, v, o, lse, do, cu, scale)
    cp = cupy()
    q, k, v, o, lse, do = (cp.ascontiguousarray(x) for x in (q, k, v, o, lse, do))
    total, h, d = q.shape
    dq, dk, dv = cp.empty_like(q), cp.empty_like(k), cp.empty_like(v)
    if total * h == 0:
        return dq, dk, dv
    delta = cp.empty((total, h), dtype=q.dtype)
    cu_d, seq = _seq_of(cp, cu)
    sfx = _SUFFIX[q.dtype]
    n = total * h
    grid, sc = ((n + _BLOCK - 1) // _BLOCK,), q.dtype.type(scale)
    dims = (np.int32(total), np.int32(h), np.int32(d), sc)
    _module().get_function(f"packed_attn_bwd_dq_{sfx}")(
        grid, (_BLOCK,), (q, k, v, o, do, lse, cu_d, seq, dq, delta, *dims))
    _module().get_function(f"packed_attn_bwd_dkdv_{sfx}")(
        grid, (_BLOCK,), (q, k, v, do, lse, delta, cu_d, seq, dk, dv, *dims))
    return dq, dk, dv


# ---- autograd node --------------------------------------------------------------------------
class PackedAttentionFn(Function):
    def forward(self, q, k, v, cu=None, scale=1.0):
        self.cu, self.scale = cu, scale
        o, lse = packed_attention_fwd(q, k, v, cu, scale)
        self.save_for_backward(q, k, v, o, lse)
        return o

    def backward(self, g):
        q, k, v, o, lse = self.saved
        return packed_attention_bwd(q, k, v, o, lse, g, self.cu, self.scale)


def packed_attention(q, k, v, cu_seqlens, scale=None):
    """Causal attention over packed sequences (see the module docstring); differentiable."""
    if q.ndim != 3 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(
            "packed attention needs q, k, v of one shape (T_total, H, D), got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    cu = check_cu_seqlens(cu_seqlens, q.shape[0])
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return PackedAttentionFn.apply(q, k, v, cu=cu, scale=scale)

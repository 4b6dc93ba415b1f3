"""Connectionist temporal classification loss (Graves et al. 2006) as an autograd node.

``ctc_loss(log_probs, targets, input_lengths, target_lengths)`` takes torch's layout:
``log_probs`` (T, N, C) log-probabilities (a ``log_softmax`` output), targets as an
(N, S) padded integer array or the 1-D concatenation of all targets, lengths per sample.
The forward runs the alpha recursion over the extended label sequence (blanks between and
around the labels, length 2S + 1) in log space, vectorized over the batch, in float64; the
backward runs the beta recursion and returns ``d loss / d log_probs`` = minus the posterior
occupancy of each class at each time divided by the probability of the label sequence
(scattered from extended labels to classes with one ``bincount``).

Saved for backward: the float64 log-probabilities gathered at the extended labels
(T, N, 2S + 1), the alphas, the extended labels and the lengths; the (T, N, C) input itself
is not kept (only its shape).

>>> import numpy as np, skiff
>>> from skiff.kernels.train.core.nn.functional import log_softmax
>>> lp = log_softmax(skiff.tensor(np.zeros((4, 1, 3))), axis=-1)
>>> loss = ctc_loss(lp, np.array([[1, 2]]), [4], [2], reduction="sum")
>>> round(float(loss.item()), 4)   # -log(6 / 81): six of the 81 paths read "1 2"
2.6027
"""

from __future__ import annotations

import numpy as np

from ...autograd import Function, xp_of
from ...loss_policy import float32_in_mixed
from ...tensor import Tensor

__all__ = ["ctc_loss", "CTCLossFn"]

_NEG = -np.inf


def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)) elementwise, -inf safe."""
    m = np.maximum(np.maximum(a, b), c)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(a - safe) + np.exp(b - safe) + np.exp(c - safe))


def _shift(a, k):
    """``a`` shifted right by ``k`` along the last axis, -inf filled."""
    out = np.full_like(a, _NEG)
    out[..., k:] = a[..., : a.shape[-1] - k]
    return out


def _shift_left(a, k):
    out = np.full_like(a, _NEG)
    out[..., : a.shape[-1] - k] = a[..., k:]
    return out


class CTCLossFn(Function):
    def forward(self, lp, ext, in_len, ext_len, blank=0, reduction="mean", zero_infinity=False):
        xp = xp_of(lp)
        T, N, C = lp.shape
        L = ext.shape[1]
        host = lp.get() if xp is not np else lp
        if xp is not np:  # the label arrays came over with lp (one op's operands): back here
            ext, in_len, ext_len = (v.get() if hasattr(v, "get") else v
                                    for v in (ext, in_len, ext_len))
        n_idx = np.arange(N)[None, :, None]
        g = host[:, n_idx[0], ext].astype(np.float64)  # (T, N, L): lp at the extended labels
        valid = np.arange(L)[None, :] < ext_len[:, None]  # (N, L)
        g = np.where(valid[None], g, _NEG)
        # the s-2 skip is allowed onto a label that differs from the label two back
        skip = np.zeros((N, L), bool)
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
        alpha = np.full((T, N, L), _NEG)
        alpha[0, :, 0] = g[0, :, 0]
        alpha[0, :, 1] = np.where(ext_len > 1, g[0, :, 1], _NEG)
        for t in range(1, T):
            a = alpha[t - 1]
            alpha[t] = _lse3(a, _shift(a, 1), np.where(skip, _shift(a, 2), _NEG)) + g[t]
        last = alpha[in_len - 1, np.arange(N)]  # (N, L) at each sample's last frame
        end1 = last[np.arange(N), ext_len - 1]
        end2 = np.where(ext_len > 1, last[np.arange(N), np.maximum(ext_len - 2, 0)], _NEG)
        m = np.maximum(end1, end2)
        safe = np.where(np.isfinite(m), m, 0.0)
        with np.errstate(divide="ignore"):
            nll = -(safe + np.log(np.exp(end1 - safe) + np.exp(end2 - safe)))  # (N,)
        inf = ~np.isfinite(nll)
        if zero_infinity:
            nll = np.where(inf, 0.0, nll)
        self.save_for_backward(g, alpha, ext, in_len, ext_len, nll, inf, skip)
        self.meta = (T, N, C, blank, reduction, zero_infinity, lp.dtype, xp)
        tgt_len = np.maximum((ext_len - 1) // 2, 1)
        if reduction == "none":
            out = nll
        elif reduction == "sum":
            out = nll.sum()
        else:
            out = (nll / tgt_len).mean()
        return xp.asarray(np.asarray(out, dtype=lp.dtype))

    def backward(self, gout):
        g, alpha, ext, in_len, ext_len, nll, inf, skip = self.saved
        T, N, C, blank, reduction, zero_infinity, dtype, xp = self.meta
        L = ext.shape[1]
        beta = np.full((T, N, L), _NEG)
        rows = np.arange(N)
        init = np.full((N, L), _NEG)
        init[rows, ext_len - 1] = 0.0
        init[rows, np.maximum(ext_len - 2, 0)] = np.where(ext_len > 1, 0.0, _NEG)
        init[rows, ext_len - 1] = 0.0
        nxt = np.full((N, L), _NEG)
        skip_from = _shift_left(skip, 2)  # s may jump to s+2 when s+2 allows the skip
        for t in range(T - 1, -1, -1):
            if t < T - 1:
                b = nxt
                rec = _lse3(b, _shift_left(b, 1), np.where(skip_from, _shift_left(b, 2), _NEG))
            else:
                rec = np.full((N, L), _NEG)
            cur = np.where((t == in_len - 1)[:, None], init, rec) + g[t]
            cur = np.where((t > in_len - 1)[:, None], _NEG, cur)
            beta[t] = cur
            nxt = cur
        # occupancy of (t, s): alpha + beta - g (g counted once), over P = exp(-nll)
        with np.errstate(invalid="ignore"):
            occ = np.exp(alpha + beta - g + nll[None, :, None])
        occ = np.where(np.isfinite(occ), occ, 0.0)
        go = np.asarray(gout.get() if xp is not np else gout, np.float64)
        if reduction == "none":
            scale = go.reshape(N)
        elif reduction == "sum":
            scale = np.full(N, float(go))
        else:
            scale = float(go) / (N * np.maximum((ext_len - 1) // 2, 1))
        scale = np.where(inf & zero_infinity, 0.0, scale)
        w = -occ * scale[None, :, None]
        idx = (np.arange(T)[:, None, None] * N + rows[None, :, None]) * C + ext[None, :, :]
        # only the (T, N, 2S + 1) extended labels are summed in float64 (a repeated label
        # shares its class); the dense (T, N, C) gradient is written once, in the input's dtype
        cells, where = np.unique(idx.ravel(), return_inverse=True)
        grad = np.zeros(T * N * C, dtype)
        grad[cells] = np.bincount(where, weights=w.ravel(), minlength=len(cells))
        return xp.asarray(grad.reshape(T, N, C)), None, None, None


def _as_int(v, name):
    a = np.asarray(v.numpy() if isinstance(v, Tensor) else
                   (v.get() if hasattr(v, "get") else v))
    if a.dtype.kind not in "iu":
        raise TypeError(f"ctc_loss: {name} must be integers, got dtype {a.dtype}")
    return a.astype(np.int64)


@float32_in_mixed
def ctc_loss(log_probs: Tensor, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss of ``log_probs`` (T, N, C) against ``targets``; torch's semantics.

    ``reduction="mean"`` divides each sample's loss by its target length and averages over
    the batch; ``"sum"`` adds; ``"none"`` gives (N,). ``zero_infinity`` makes the loss of an
    impossible alignment (input shorter than the target needs) zero, with zero gradient.
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be mean, sum or none, got {reduction!r}")
    if log_probs.ndim != 3:
        raise ValueError(f"ctc_loss expects log_probs of shape (T, N, C), got "
                         f"{tuple(log_probs.shape)}")
    T, N, C = log_probs.shape
    tg = _as_int(targets, "targets")
    in_len = _as_int(input_lengths, "input_lengths").reshape(-1)
    tg_len = _as_int(target_lengths, "target_lengths").reshape(-1)
    if len(in_len) != N or len(tg_len) != N:
        raise ValueError(f"ctc_loss: {N} samples but {len(in_len)} input lengths and "
                         f"{len(tg_len)} target lengths")
    if (in_len < 1).any() or (in_len > T).any():
        raise ValueError(f"ctc_loss: input lengths must be in 1..{T}, got {in_len.tolist()}")
    if tg.ndim == 1:
        offsets = np.concatenate([[0], np.cumsum(tg_len)])
        rows = [tg[offsets[i]:offsets[i + 1]] for i in range(N)]
    else:
        rows = [tg[i, : tg_len[i]] for i in range(N)]
    S = max(1, int(tg_len.max(initial=0)))
    ext = np.full((N, 2 * S + 1), blank, np.int64)
    for i, r in enumerate(rows):
        if len(r) and (r.min() < 0 or r.max() >= C or (r == blank).any()):
            raise ValueError(f"ctc_loss: targets of sample {i} must be classes in 0..{C - 1} "
                             f"other than the blank {blank}, got {r.tolist()}")
        ext[i, 1 : 2 * len(r) : 2] = r
    return CTCLossFn.apply(log_probs, ext, in_len, 2 * tg_len + 1, blank=blank,
                           reduction=reduction, zero_infinity=zero_infinity)

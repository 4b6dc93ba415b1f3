"""Losses as autograd nodes: ``cross_entropy`` (fused, stable log-softmax + NLL that keeps
the probabilities) and ``mse_loss``.
"""

from __future__ import annotations

import numpy as np

from ... import autograd as _autograd
from ...autograd import Function, xp_of
from ...loss_policy import float32_in_mixed
from ...tensor import Tensor

__all__ = ["cross_entropy", "linear_cross_entropy", "mse_loss", "check_class_ids", "classes_last"]


def _rows(fn, logits, target, ignore_index):
    """``(xp, logits as rows, which targets count, targets with the ignored ones at 0)``;
    the logits' shape kept on the node for its backward."""
    xp = xp_of(logits)
    x = logits.reshape(-1, logits.shape[-1])
    t = target.reshape(-1)
    fn.shape = logits.shape
    valid = t != ignore_index
    return xp, x, valid, xp.where(valid, t, 0)


class CrossEntropyFn(Function):
    """Fused, stable log-softmax + NLL over the last axis; keeps the probabilities."""

    def forward(self, logits, target, ignore_index=-100, reduction="mean"):
        xp, x, valid, safe_t = _rows(self, logits, target, ignore_index)
        p = x - x.max(axis=1, keepdims=True)
        rows = xp.arange(x.shape[0])
        # loss_i = log z_i - (x_it - max_i), the log-softmax torch takes: -log(p) of the
        # probability stopped at -log(tiny) (87.3 in float32) for a confidently wrong row
        picked = p[rows, safe_t].copy()
        xp.exp(p, out=p)
        z = p.sum(axis=1, keepdims=True)
        p /= z
        loss = xp.log(z[:, 0]) - picked
        loss *= valid
        self.reduction = reduction
        # on the device: no host sync in the step (a CUDA graph captures it, core/graph.py);
        # in float32 at least (a 16-bit float holds whole numbers exactly only to 2048)
        wide = p.dtype if p.dtype.itemsize >= 4 else np.dtype(np.float32)
        self.count = (xp.maximum(valid.sum(), 1).astype(wide) if reduction == "mean" else 1)
        self.save_for_backward(p, safe_t, valid)
        if reduction == "none":
            return loss.reshape(target.shape)
        total = loss.sum()
        if reduction != "mean":
            return total
        # torch's 0/0 = nan over no counted targets (empty, all ignored); gradients 0
        return (total / valid.sum().astype(wide)).astype(p.dtype)

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


class WeightedCrossEntropyFn(Function):
    """Cross-entropy with class weights ``w`` (C,) and label smoothing ``eps`` (torch's
    semantics): row i's loss is ``-sum_c q_ic log p_ic`` with ``q_ic = (1 - eps) w_c [c = t_i]
    + eps / C * w_c``; the mean divides by the sum of ``w[t_i]`` over the rows counted."""

    def forward(self, logits, target, weight=None, eps=0.0, ignore_index=-100,
                reduction="mean"):
        xp, x, valid, safe_t = _rows(self, logits, target, ignore_index)
        c = x.shape[1]
        z = x - x.max(axis=1, keepdims=True)
        logp = z - xp.log(xp.exp(z).sum(axis=1, keepdims=True))
        w = xp.ones(c, dtype=x.dtype) if weight is None else xp.asarray(weight, dtype=x.dtype)
        rows = xp.arange(x.shape[0])
        q = xp.zeros_like(x)  # the rows' target distributions, weighted
        q[rows, safe_t] = (1.0 - eps) * w[safe_t]
        if eps:
            q += (eps / c) * w[None, :]
        q *= valid[:, None]
        loss = -(q * logp).sum(axis=1)
        self.reduction = reduction
        self.count = (xp.maximum((w[safe_t] * valid).sum(), xp.finfo(x.dtype).tiny)
                      if reduction == "mean" else 1)
        self.save_for_backward(logp, q)
        if reduction == "none":
            return loss.reshape(target.shape)
        total = loss.sum()
        if reduction != "mean":
            return total
        return total / (w[safe_t] * valid).sum()  # torch's nan over no weight; gradients 0

    def backward(self, g):
        logp, q = self.saved
        xp = xp_of(logp)
        if self.reduction == "none":
            scale = g.reshape(-1)[:, None].astype(logp.dtype)
        else:
            scale = (g / self.count).astype(logp.dtype)
        # d/dz of -sum_c q_c log softmax(z)_c = p * sum_c q_c - q
        gx = (xp.exp(logp) * q.sum(axis=1, keepdims=True) - q) * scale
        return gx.reshape(self.shape), None


_REDUCTIONS = ("mean", "sum", "none")


def check_class_ids(ids, n: int, what: str, ignore_index=None) -> None:
    """Raise IndexError when a host array of class ids (or rows) holds one outside
    ``[0, n)`` other than ``ignore_index`` (as torch does; negative ids do not wrap). On a GPU
    nothing is checked: reading the ids back would stop the step (and a CUDA graph)."""
    if not isinstance(ids, np.ndarray) or ids.size == 0:
        return
    lo, hi = int(ids.min()), int(ids.max())
    if lo >= 0 and hi < n:
        return
    bad = (ids < 0) | (ids >= n)
    if ignore_index is not None:
        bad &= ids != ignore_index
    if bad.any():
        raise IndexError(f"{what} {int(ids[bad].flat[0])} is out of range [0, {n})"
                         + (f" (and not ignore_index={ignore_index})"
                            if ignore_index is not None else ""))


def classes_last(logits: Tensor, t, name: str):
    """torch's layouts as skiff's fused losses take them (classes on the last axis): (N, C)
    as it is, (N, C, d1, ...) with its classes moved last, (C,) as one row; the targets
    checked against them."""
    if logits.ndim == 1:
        want = ()
    else:
        want = (logits.shape[0],) + tuple(logits.shape[2:])
    if tuple(t.shape) != want:
        raise ValueError(f"{name}: input of shape {tuple(logits.shape)} (classes on axis "
                         f"{0 if logits.ndim == 1 else 1}) needs targets of shape {want}, "
                         f"got {tuple(t.shape)}")
    if logits.ndim == 1:
        return logits.reshape(1, -1), t.reshape(1)
    if logits.ndim >= 3:
        logits = logits.transpose((0,) + tuple(range(2, logits.ndim)) + (1,))
    return logits, t


@float32_in_mixed
def cross_entropy(input: Tensor, target, weight=None, *, ignore_index: int = -100,  # noqa: A002
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """torch's cross-entropy of logits ``input`` (N, C), (N, C, d1, ...) or (C,) against
    integer class ids ``target`` (N,), (N, d1, ...) or (), or class probabilities of the
    input's shape (:func:`_cross_entropy_probs`).

    Targets equal to ``ignore_index`` add nothing and do not count in the mean; any other
    outside [0, C) raises IndexError. ``weight`` (C,) weighs each class (the mean divides by
    the targets' weights, as torch does); ``label_smoothing`` in [0, 1) mixes that much of a
    uniform distribution into the targets. A language model's (B, T, V) logits: flatten them
    to (B*T, V) first (as torch asks).
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    if isinstance(target, Tensor) and target.dtype.kind in "fc" and (
            tuple(target.shape) == tuple(input.shape)):  # class probabilities (soft labels)
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if _autograd._batch_hook is not None and _batched_here(input, target):  # vmap_r30
        from ...vmap_rules_r30 import class_loss

        return class_loss(cross_entropy, input, target, weight, ignore_index, reduction,
                          label_smoothing=label_smoothing)
    t = target._data if isinstance(target, Tensor) else target
    if not hasattr(t, "dtype"):
        t = np.asarray(t)
    if t.dtype.kind in "fc" and tuple(t.shape) == tuple(input.shape):
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if t.dtype.kind not in "iu":
        raise TypeError(
            f"cross_entropy targets must be integer class indices, or class probabilities of "
            f"the input's shape {tuple(input.shape)}; got dtype {t.dtype} of shape "
            f"{tuple(t.shape)}")
    shape = tuple(t.shape)
    logits, t = classes_last(input, t, "cross_entropy")
    check_class_ids(t, logits.shape[-1], "cross_entropy: target", ignore_index)
    loss = _cross_entropy_last(logits, t, weight, ignore_index, reduction, label_smoothing)
    return loss.reshape(shape) if reduction == "none" else loss


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing):  # noqa: A002
    """torch's cross-entropy against class probabilities (mixup / cutmix / distillation soft
    labels) of the input's shape: ``-sum_c w_c t_c log_softmax(x)_c`` per element, smoothed
    targets ``t (1 - e) + e / C``; the mean divides by the number of elements (not by the
    weights, as torch's)."""
    from .activations import log_softmax

    if not (isinstance(label_smoothing, (int, float)) and 0.0 <= label_smoothing < 1.0):
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
    cdim = 0 if input.ndim == 1 else 1
    c = input.shape[cdim]
    t = target if isinstance(target, Tensor) else Tensor(xp_of(input._data).asarray(target))
    if label_smoothing:
        t = t * (1.0 - label_smoothing) + label_smoothing / c
    terms = t * log_softmax(input, cdim)
    if weight is not None:
        w = weight if isinstance(weight, Tensor) else Tensor(np.asarray(weight))
        terms = terms * w.reshape((c,) + (1,) * (input.ndim - cdim - 1))
    loss = -terms.sum(cdim)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _cross_entropy_last(logits, t, weight, ignore_index, reduction, label_smoothing):
    """The fused nodes over logits (..., C) with the classes last, targets (...)."""
    if not (isinstance(label_smoothing, (int, float)) and 0.0 <= label_smoothing < 1.0):
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing!r}")
    if weight is None and not label_smoothing:
        return CrossEntropyFn.apply(logits, t, ignore_index=ignore_index, reduction=reduction)
    if weight is not None:
        w = weight._data if isinstance(weight, Tensor) else weight
        shape = tuple(getattr(w, "shape", np.shape(w)))
        if shape != (logits.shape[-1],):
            raise ValueError(f"cross_entropy: weight needs one value per class "
                             f"({logits.shape[-1]},), got shape {shape}")
        # checked where they are host values; on a GPU the check would be a read per step
        # (torch checks nothing)
        if not type(w).__module__.startswith("cupy"):
            host = np.asarray(w, np.float64)
            if not (np.isfinite(host).all() and (host >= 0).all()):
                raise ValueError("cross_entropy: class weights must be finite and >= 0")
        weight = w
    return WeightedCrossEntropyFn.apply(logits, t, weight=weight, eps=float(label_smoothing),
                                        ignore_index=ignore_index, reduction=reduction)


@float32_in_mixed
def mse_loss(input: Tensor, target, reduction: str = "mean") -> Tensor:
    """Mean squared error (``reduction`` mean, sum or none)."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    tshape = tuple(getattr(target, "shape", ()))
    if tshape != tuple(input.shape):
        from ...shape_error import ShapeError

        raise ShapeError(
            f"mse_loss: input shape {tuple(input.shape)} != target shape {tshape}"
        )
    d = input - target
    sq = d * d
    if reduction == "none":
        return sq
    return sq.mean() if reduction == "mean" else sq.sum()


# ---- the head and the loss in one node, a slice of rows at a time ------------------------------
LINEAR_CE_BYTES = 64 << 20  # logits of one slice of rows at most (one buffer, reused)
LINEAR_CE_MIN_ROWS = 256  # fewer rows make the GEMMs slower (OpenBLAS: 131 rows 30% slower)


class LinearCrossEntropyFn(Function):
    """``cross_entropy(x @ W.T + b, target)`` (mean over the targets not ignored) without the
    (N, V) logits: a slice of rows at a time in one reused buffer (LINEAR_CE_BYTES, but at
    least LINEAR_CE_MIN_ROWS rows, where the GEMMs keep their speed). When a graph is
    recorded the slice's gradients (``(softmax - onehot) @ W``, ``x^T (softmax - onehot)``)
    are computed at once from the probabilities in hand, and backward only scales them: no
    logits are recomputed and none are kept."""

    def forward(self, x, w, b, target, ignore_index=-100):
        xp = xp_of(x)
        x2 = x.reshape(-1, x.shape[-1])
        t = target.reshape(-1)
        n, v = x2.shape[0], w.shape[0]
        valid = t != ignore_index
        count = max(int(valid.sum()), 1)
        nx, nw, nb = self.needs_input_grad[:3]
        gx = xp.empty_like(x2) if nx else None
        gw = xp.zeros_like(w) if nw else None
        gb = xp.zeros_like(b) if nb else None
        step = max(LINEAR_CE_MIN_ROWS, LINEAR_CE_BYTES // max(1, v * x2.dtype.itemsize))
        step = max(1, min(n, step))
        buf = xp.empty((step, v), dtype=xp.result_type(x2.dtype, w.dtype))
        total = 0.0
        for i in range(0, n, step):
            j = min(n, i + step)
            z = buf[:j - i]
            xp.matmul(x2[i:j], w.T, out=z)  # (r, V)
            if b is not None:
                z += b
            rows = xp.arange(j - i)
            ok = valid[i:j]
            ti = xp.where(ok, t[i:j], 0)
            z -= z.max(axis=1, keepdims=True)
            picked = z[rows, ti].copy()  # the target's shifted logit
            xp.exp(z, out=z)
            s = z.sum(axis=1)
            total += float(((xp.log(s) - picked) * ok).sum())
            if nx or nw or nb:
                z /= s[:, None]  # softmax
                z[rows, ti] -= 1.0
                z *= ok[:, None].astype(z.dtype)  # ignored rows give nothing
                if nx:
                    gx[i:j] = z @ w
                if nw:
                    gw += z.T @ x2[i:j]
                if nb:
                    gb += z.sum(axis=0)
        self.count, self.xshape = count, x.shape
        self.save_for_backward(gx, gw, gb)
        return xp.asarray(total / count, dtype=x2.dtype)

    def backward(self, g):
        gx, gw, gb = self.saved
        scale = g / self.count
        return (None if gx is None else (gx * scale).reshape(self.xshape),
                None if gw is None else gw * scale,
                None if gb is None else gb * scale, None)


def linear_cross_entropy(x: Tensor, weight: Tensor, bias, target, ignore_index: int = -100):
    """``cross_entropy(linear(x, weight, bias), target)`` (mean) without ever holding the
    (N, V) logits: a language model's head and loss in one node, memory O(N C + V C)
    instead of O(N V) (a 103k vocabulary over 2k tokens: 850 MB of logits, twice)."""
    t = target._data if isinstance(target, Tensor) else target
    if not hasattr(t, "dtype"):
        t = np.asarray(t)
    if t.dtype.kind not in "iu":
        raise TypeError(f"targets must be integer class indices, got dtype {t.dtype}")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear_cross_entropy: input of shape {tuple(x.shape)} does not "
                         f"match weight of shape {tuple(weight.shape)}")
    if tuple(t.shape) != tuple(x.shape[:-1]):
        raise ValueError(f"linear_cross_entropy: input of shape {tuple(x.shape)} needs "
                         f"targets of shape {tuple(x.shape[:-1])}, got {tuple(t.shape)}")
    return LinearCrossEntropyFn.apply(x, weight, bias, t, ignore_index=ignore_index)


def _batched_here(*xs):
    from ...vmap_tensor_r30 import batched_here

    return batched_here(*xs)

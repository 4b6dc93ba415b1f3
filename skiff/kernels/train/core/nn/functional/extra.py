"""More of ``torch.nn.functional``, built from skiff's differentiable ops with torch's
arguments and defaults: activations (``tanh``, ``leaky_relu``, ``elu``, ``softplus``), losses
(``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``nll_loss``, ``binary_cross_entropy``,
``binary_cross_entropy_with_logits``, ``kl_div``), ``one_hot``, ``pad``, ``normalize``,
``cosine_similarity``, ``adaptive_avg_pool2d``, ``interpolate`` (nearest) and ``group_norm``.
tests/kernels/train/core/test_torch_style.py compares each with torch, value and gradient.
"""

from __future__ import annotations

import numpy as np

from ... import autograd as _autograd
from ... import tensor as T
from ...autograd import xp_of
from ...layout_r45 import keeps_channels_last
from ...loss_policy import float32_in_mixed
from ...tensor import Tensor, where
from .conv import as_pair, avg_pool2d
from .losses import check_class_ids, classes_last

__all__ = ["tanh", "leaky_relu", "elu", "softplus", "l1_loss", "smooth_l1_loss", "huber_loss",
           "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "one_hot", "pad", "normalize", "cosine_similarity", "adaptive_avg_pool2d",
           "interpolate", "group_norm"]

_REDUCTIONS = ("mean", "sum", "none")


def _const(a) -> Tensor:
    """An array as a tensor of its own dtype that needs no gradient."""
    return Tensor._make(a, False, None, 0)


def _reduce(per, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    return per.mean() if reduction == "mean" else per.sum() if reduction == "sum" else per


def _same_shape(name, a, b):
    if tuple(a.shape) != tuple(getattr(b, "shape", ())):
        raise ValueError(f"{name}: input {tuple(a.shape)} and target "
                         f"{tuple(getattr(b, 'shape', ()))} differ in shape")


def tanh(x):
    return x.tanh()


def leaky_relu(x, negative_slope=0.01, inplace=False):
    from .piecewise_r47 import piecewise_linear  # its gradient in the graph (round 47)
    return piecewise_linear(x, "leaky", negative_slope)


def elu(x, alpha=1.0, inplace=False):
    return where(x > 0, x, x.clamp(max=0.0).expm1() * alpha)


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta x)) / beta``, and ``x`` where ``beta x > threshold`` (torch's)."""
    z = x * beta
    soft = (z.relu() + ((-z.abs()).exp() + 1.0).log()) * (1.0 / beta)
    return where(z > threshold, x, soft)


@float32_in_mixed
def l1_loss(input, target, reduction="mean"):  # noqa: A002 - torch's names
    _same_shape("l1_loss", input, target)
    return _reduce((input - target).abs(), reduction)


@float32_in_mixed
def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002
    _same_shape("huber_loss", input, target)
    d = input - target
    a = d.abs()
    per = where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    return _reduce(per, reduction)


@float32_in_mixed
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):  # noqa: A002
    _same_shape("smooth_l1_loss", input, target)
    if beta == 0:
        return l1_loss(input, target, reduction)
    d = input - target
    a = d.abs()
    per = where(a < beta, d * d * (0.5 / beta), a - 0.5 * beta)
    return _reduce(per, reduction)


@float32_in_mixed
def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):  # noqa: A002
    """Negative log-likelihood of log-probabilities ``input`` (N, C), (N, C, d1, ...) or
    (C,) at class ids ``target`` (N,), (N, d1, ...) or (); torch's ``weight`` (C,) weighs
    each class (the mean divides by the targets' weights)."""
    if _autograd._batch_hook is not None and _batched_here(input, target):  # vmap_r30
        from ...vmap_rules_r30 import class_loss

        return class_loss(nll_loss, input, target, weight, ignore_index, reduction)
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    shape = tuple(t.shape)
    x, t = classes_last(input, t, "nll_loss")
    c = x.shape[-1]
    check_class_ids(t, c, "nll_loss: target", ignore_index)
    x, t = x.reshape(-1, c), t.reshape(-1)
    xp = x.xp
    t = xp.asarray(t)
    valid = t != ignore_index
    safe = xp.where(valid, t, 0)
    w = valid.astype(x.dtype)
    if weight is not None:
        wc = weight._data if isinstance(weight, Tensor) else weight
        w = w * xp.asarray(wc, dtype=x.dtype)[safe]
    picked = x[xp.arange(x.shape[0]), safe] * w
    if reduction == "mean":
        return -(picked.sum() * (1.0 / max(float(w.sum()), np.finfo(np.float64).tiny)))
    if reduction == "none":
        return -picked.reshape(*shape)
    return _reduce(-picked, reduction)


def _weighted(per, weight):
    """``per * weight`` (torch's ``weight=``: broadcast over the elements)."""
    if weight is None:
        return per
    return per * (weight if isinstance(weight, Tensor) else per.xp.asarray(weight, per.dtype))


@float32_in_mixed
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean"):
    """On probabilities; each log is held at -100 or above, as torch does. ``weight`` scales
    each element's loss (torch's argument order: a string third is taken as ``reduction``)."""
    if isinstance(weight, str):
        weight, reduction = None, weight
    _same_shape("binary_cross_entropy", input, target)
    for name, t in (("input", input), ("target", target)):  # torch's checks (nan fails too)
        if getattr(t, "_batched", False):  # inside a batched vmap (its data is refused)
            continue
        a = t._data if isinstance(t, Tensor) else t
        if not bool(((a >= 0) & (a <= 1)).all()):
            raise RuntimeError(f"all elements of {name} should be between 0 and 1")
    y = _target_value(target)
    log_p = input.log().clamp(min=-100.0)
    log_q = (1.0 - input).log().clamp(min=-100.0)
    return _reduce(_weighted(-(log_p * y + log_q * (1.0 - y)), weight), reduction)


@float32_in_mixed
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,  # noqa: A002
                                     reduce=None, reduction="mean", pos_weight=None):
    """torch's: ``weight`` scales each element's loss, ``pos_weight`` the positive term (per
    class, broadcast over the last axis); a string third argument is taken as ``reduction``."""
    if isinstance(weight, str):
        weight, reduction = None, weight
    _same_shape("binary_cross_entropy_with_logits", input, target)
    y = _target_value(target)
    log_sig = -(((-input.abs()).exp() + 1.0).log() + (-input).relu())  # log sigmoid(z)
    log_one_minus = log_sig - input  # log (1 - sigmoid(z))
    w = 1.0 if pos_weight is None else _target_value(pos_weight)
    return _reduce(_weighted(-(log_sig * (w * y) + log_one_minus * (1.0 - y)), weight),
                   reduction)


@float32_in_mixed
def kl_div(input, target, reduction="mean", log_target=False):  # noqa: A002
    """KL(target || exp(input)) with ``input`` log-probabilities (torch's argument order);
    ``batchmean`` divides the sum by the batch size. A target that requires grad (R-Drop's
    and mutual learning's symmetric KL of two outputs) is differentiated as torch's."""
    if isinstance(target, Tensor) and target.requires_grad:
        if log_target:
            per = target.exp() * (target - input)
        else:  # torch's xlogy(t, t) - t * input
            per = target.xlogy(target) - target * input
        if reduction == "batchmean":
            return per.sum() * (1.0 / input.shape[0])
        return _reduce(per, reduction)
    t = target._data if isinstance(target, Tensor) else input.xp.asarray(target)
    xp = input.xp
    if log_target:
        per = (_const(t.astype(input.dtype)) - input) * _const(xp.exp(t).astype(input.dtype))
    else:
        logt = xp.where(t > 0, xp.log(xp.where(t > 0, t, 1)), 0)
        per = (_const(logt.astype(input.dtype)) - input) * _const(t.astype(input.dtype))
    if reduction == "batchmean":
        return per.sum() * (1.0 / input.shape[0])
    return _reduce(per, reduction)


def one_hot(target, num_classes=-1):
    if getattr(target, "_batched", False):  # inside a batched vmap call (vmap_r30)
        from ...vmap_rules_r30 import one_hot as batched

        return batched(target, int(num_classes))
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype.kind not in "iu":
        raise TypeError(f"one_hot needs integer class ids, got dtype {t.dtype}")
    xp = xp_of(t)
    n = int(t.max()) + 1 if num_classes < 0 else int(num_classes)
    check_class_ids(t, n, "one_hot: class")
    return _const((t[..., None] == xp.arange(n)).astype(np.int64))


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def pad(x, pad, mode="constant", value=0.0):
    """torch's ``pad``: ``(left, right, top, bottom, ...)`` from the last axis backwards;
    constant padding (negative amounts cut), or ``reflect`` / ``replicate`` / ``circular``
    (:mod:`.pad_modes`)."""
    if mode != "constant":
        from .pad_modes import pad_copying

        return pad_copying(x, pad, mode)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad takes pairs for up to {x.ndim} axes, got {pad}")
    out = x
    for k in range(len(pad) // 2):
        axis = x.ndim - 1 - k
        lo, hi = pad[2 * k], pad[2 * k + 1]
        n = out.shape[axis]
        if lo < 0 or hi < 0:
            out = out[(slice(None),) * axis + (slice(max(-lo, 0), n - max(-hi, 0)),)]
            lo, hi = max(lo, 0), max(hi, 0)
        parts = []
        for amount in (lo, None, hi):
            if amount is None:
                parts.append(out)
            elif amount:
                shape = list(out.shape)
                shape[axis] = amount
                parts.append(_const(out.xp.full(tuple(shape), value, dtype=out.dtype)))
        out = parts[0] if len(parts) == 1 else T.cat(parts, axis=axis)
    return out


def normalize(x, p=2.0, dim=1, eps=1e-12):
    """torch's: ``x / max(||x||_p, eps)``; an all-zero slice has gradient ``1 / eps`` (the
    norm's own gradient is 0 there, as torch's; sqrt's inf made it nan)."""
    from ...ops_linalg import vector_norm

    return x / vector_norm(x, p, dim=dim, keepdim=True).clamp(min=eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """torch's: ``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` over ``dim`` (the
    operands broadcast first); a zero vector has a finite gradient, as torch's."""
    from ...ops_linalg import vector_norm

    if tuple(x1.shape) != tuple(x2.shape):
        shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
        x1, x2 = x1.expand(*shape), x2.expand(*shape)
    n1 = vector_norm(x1, 2, dim=dim, keepdim=True).clamp(min=eps)
    n2 = vector_norm(x2, 2, dim=dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(axis=dim)


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def adaptive_avg_pool2d(x, output_size):
    """Average pooling to ``output_size`` (h, w; ``None`` keeps that size): 1 is global
    average pooling; sizes that divide the input's are equal windows; others torch's
    overlapping bins ``[floor(i H / oh), ceil((i + 1) H / oh))`` (two averaging products,
    one per axis: the bins are separable; refused before round 33). (C, H, W) too."""
    if x.ndim == 3:
        return adaptive_avg_pool2d(x.unsqueeze(0), output_size)[0]
    if x.ndim != 4:
        raise ValueError(f"adaptive_avg_pool2d expects (N, C, H, W), got {tuple(x.shape)}")
    h, w = x.shape[2], x.shape[3]
    if isinstance(output_size, (tuple, list)):
        output_size = tuple(n if o is None else o for o, n in zip(output_size, (h, w)))
    oh, ow = as_pair(output_size, "output_size")
    if (oh, ow) == (1, 1):
        return x.mean(axis=(2, 3), keepdims=True)
    if h % oh or w % ow:
        from ..conv3d import _bins

        ah = Tensor._make(_bins(x.xp, h, oh, x.dtype), False, None, 0)
        aw = Tensor._make(_bins(x.xp, w, ow, x.dtype), False, None, 0)
        return ((x @ aw).swapaxes(-1, -2) @ ah).swapaxes(-1, -2)
    return avg_pool2d(x, (h // oh, w // ow), (h // oh, w // ow))


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch's ``interpolate`` (its argument order): whole-factor nearest upsampling of
    (N, C, H, W) repeats each pixel (one broadcast copy); other sizes, factors and the
    linear modes (``linear``, ``bilinear``, ``trilinear``, ``align_corners``) go through
    :mod:`.interp`."""
    if antialias:
        return _interpolate_aa(x, size, scale_factor, mode, align_corners,
                               recompute_scale_factor)
    whole = None
    if mode == "nearest" and x.ndim == 4 and align_corners is None:
        if size is not None and scale_factor is None:
            sh, sw = (size, size) if isinstance(size, int) else size
            if sh % x.shape[2] == 0 and sw % x.shape[3] == 0:
                whole = (sh // x.shape[2], sw // x.shape[3])
        elif scale_factor is not None and size is None:
            sf = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * 2
            if all(float(f) == int(f) and f >= 1 for f in sf):
                whole = tuple(int(f) for f in sf)
    if whole is None:
        from .interp import interpolate_general

        return interpolate_general(x, size, scale_factor, mode, align_corners,
                                   recompute_scale_factor)
    sh, sw = whole
    n, c, h, w = x.shape
    return x.reshape(n, c, h, 1, w, 1).expand(n, c, h, sh, w, sw).reshape(n, c, h * sh, w * sw)


def _aa_weights(n_in, n_out, scale, mode):
    """torch's antialiased resampling matrix (n_out, n_in) along one axis
    (``_compute_indices_weights_aa``): the filter (triangle for bilinear, Keys a=-0.5 for
    bicubic) stretched by the scale when downsampling, each row normalised to sum 1."""
    import math

    if mode == "bilinear":
        size = 2

        def filt(t):
            t = abs(t)
            return 1.0 - t if t < 1.0 else 0.0
    else:
        size, a = 4, -0.5

        def filt(t):
            t = abs(t)
            if t < 1.0:
                return ((a + 2) * t - (a + 3)) * t * t + 1
            if t < 2.0:
                return (((t - 5) * t + 8) * t - 4) * a
            return 0.0
    support = size * 0.5 * scale if scale >= 1.0 else size * 0.5
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(math.trunc(center - support + 0.5), 0)
        hi = min(math.trunc(center + support + 0.5), n_in)
        w = np.array([filt((j - center + 0.5) * inv) for j in range(lo, hi)])
        total = w.sum()
        m[i, lo:hi] = w / total if total != 0.0 else w
    return m


def _interpolate_aa(x, size, scale_factor, mode, align_corners, recompute_scale_factor):
    """torch's ``interpolate(..., antialias=True)``: bilinear or bicubic on (N, C, H, W), as
    two resampling products (differentiable in ``x``)."""
    if mode not in ("bilinear", "bicubic"):
        raise NotImplementedError(f"Anti-alias option is restricted to bilinear and bicubic "
                                  f"modes and 4-D tensors, got mode {mode!r}")
    if x.ndim != 4:
        raise NotImplementedError(f"Anti-alias option is restricted to bilinear and bicubic "
                                  f"modes and 4-D tensors, got a {x.ndim}-D tensor")
    h, w = x.shape[2], x.shape[3]
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        oh, ow = (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))
        scales = (None, None)
    else:
        sf = (tuple(scale_factor) if isinstance(scale_factor, (tuple, list))
              else (scale_factor, scale_factor))
        oh, ow = int(h * float(sf[0])), int(w * float(sf[1]))
        scales = (None, None) if recompute_scale_factor else (float(sf[0]), float(sf[1]))

    def scale_of(n_in, n_out, given):
        if align_corners:
            return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return 1.0 / given if given is not None and given > 0 else n_in / n_out

    dt = x.dtype if x.dtype.kind == "f" else np.float32
    mh = Tensor(_aa_weights(h, oh, scale_of(h, oh, scales[0]), mode), dtype=dt,
                device=x.device)
    mw = Tensor(_aa_weights(w, ow, scale_of(w, ow, scales[1]), mode).T, dtype=dt,
                device=x.device)
    return mh @ x @ mw


@keeps_channels_last  # round 45 (h7): torch's layout of the result
def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = x.shape[0], x.shape[1]
    if c % num_groups:
        raise ValueError(f"group_norm: {c} channels are not divisible into {num_groups} groups")
    g = x.reshape(n, num_groups, -1)
    mean = g.mean(axis=-1, keepdims=True)
    centred = g - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    y = (centred * (var + eps).rsqrt()).reshape(*x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(*shape)
    if bias is not None:
        y = y + bias.reshape(*shape)
    return y


def _batched_here(*xs):
    from ...vmap_tensor_r30 import batched_here

    return batched_here(*xs)


def _target_value(t):
    """A target's values as a constant: a tensor's array (a batched tensor, inside ``vmap``,
    detached: its array is the batch's)."""
    if getattr(t, "_batched", False):
        return t.detach()
    if isinstance(t, Tensor) and t.requires_grad:  # torch differentiates the target too
        return t  # (a soft label from a model: distillation, Geometric.entropy)
    return t._data if isinstance(t, Tensor) else t


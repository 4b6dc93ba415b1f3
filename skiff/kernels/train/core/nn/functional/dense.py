"""Dense layers as autograd nodes: ``linear`` (keeps its input and
weight), ``embedding``, ``scaled_dot_product_attention`` (keeps q, k, v and the attention
probabilities) and ``packed_causal_attention`` (keeps only q, k, v, the output and the
log-sum-exp per row; the probabilities are recomputed, flash-attention style).
"""

from __future__ import annotations

import math

import numpy as np

from ... import autocast_ops as _ac
from ... import half_cast as _hc
from ...autograd import Function, xp_of
from ...gemm import mm
from ...shape_error import check_matmul_dtypes
from ...tensor import Tensor, _foreign_to_numpy, _is_foreign_tensor, where
from ..fused import scatter_rows
from .losses import check_class_ids

__all__ = ["linear", "embedding", "scaled_dot_product_attention", "packed_causal_attention",
           "rotary_embedding"]


# ---- linear and embedding -------------------------------------------------------------------
class LinearFn(Function):
    """y = x @ W.T + b with x (..., in), W (out, in): one GEMM each way."""

    def forward(self, x, w, b):
        self.save_for_backward(x, w)
        check_matmul_dtypes(x, w)
        if b is not None:
            check_matmul_dtypes(b, x)
        x2 = x.reshape(-1, x.shape[-1])
        y = mm(x2, w.T)
        if b is not None:
            y += b
        if x.dtype == w.dtype and y.dtype != x.dtype and x.dtype.itemsize == 2:
            y = _hc.cast(y, x.dtype)  # bfloat16 in, bfloat16 out (torch's)
        return y.reshape(x.shape[:-1] + (w.shape[0],))

    def backward(self, g):
        x, w = self.saved
        nx, nw, nb = self.needs_input_grad
        g2 = g.reshape(-1, g.shape[-1])
        gx = mm(g2, w).reshape(x.shape) if nx else None
        gw = mm(g2.T, x.reshape(-1, x.shape[-1])) if nw else None
        gb = g2.sum(axis=0) if nb else None
        if x.dtype.itemsize == 2:  # 16-bit operands: 16-bit gradients
            gx = _hc.cast(gx, x.dtype) if gx is not None and gx.dtype != x.dtype else gx
            gw = _hc.cast(gw, w.dtype) if gw is not None and gw.dtype != w.dtype else gw
            gb = _hc.cast(gb, g.dtype) if gb is not None and gb.dtype != g.dtype else gb
        return gx, gw, gb


def layer_input(x, weight):
    """A layer's input given as a raw array (numpy's float64, a list) in the layer's dtype:
    skiff takes such arrays where torch wants a tensor, as ``Tensor(array)`` would make them;
    a Tensor (or a foreign one) keeps its dtype, and torch's refusal of two dtypes holds."""
    if isinstance(x, Tensor) or _is_foreign_tensor(x):
        return x
    arr = np.asarray(x)
    want = weight.dtype
    return arr.astype(want) if arr.dtype.kind in "biuf" and arr.dtype != want else arr


def linear(x: Tensor, weight: Tensor, bias=None) -> Tensor:
    """``x @ weight.T + bias`` (weight shape (out, in), like torch); a raw array ``x`` takes
    the weight's dtype (:func:`layer_input`)."""
    x = layer_input(x, weight)
    if x.shape[-1] != weight.shape[1]:
        from ...shape_error import ShapeError, dims

        rows = (int(np.prod(x.shape[:-1])) if x.ndim > 1 else 1, x.shape[-1])
        raise ShapeError(
            f"mat1 and mat2 shapes cannot be multiplied ({dims(rows)} and "
            f"{dims(weight.shape[::-1])}): linear: input of shape {tuple(x.shape)} does not "
            f"match weight of shape {tuple(weight.shape)} (last input axis must be "
            f"{weight.shape[1]})"
        )
    if _ac.LOW is not None:  # autocast("cpu"): torch's lower-precision op
        return LinearFn.apply(*_ac.low(x, weight, bias))
    return LinearFn.apply(x, weight, bias)


class _GradScale(Function):
    """The identity, its gradient times ``scale`` (embedding's ``scale_grad_by_freq``)."""

    def forward(self, x, scale=None):
        self.scale = scale
        return x.copy()

    def backward(self, g):
        return g * self.scale


class EmbeddingFn(Function):
    def forward(self, w, idx):
        self.wshape = w.shape
        self.save_for_backward(idx)
        return w[idx]

    def backward(self, g):
        (idx,) = self.saved
        xp = xp_of(g)
        gw = xp.zeros(self.wshape, dtype=g.dtype)
        scatter_rows(gw, idx.reshape(-1), xp.ascontiguousarray(g.reshape(-1, self.wshape[1])))
        return gw, None


def embedding(idx, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False) -> Tensor:
    """Rows of ``weight`` (n, d) picked by the integer array ``idx``; torch's arguments:
    ``padding_idx`` (that row gets no gradient), ``max_norm`` (the looked-up rows whose
    ``norm_type``-norm exceeds it are scaled down in place first, as torch's),
    ``scale_grad_by_freq`` (each lookup's gradient divided by how often its index occurs in
    ``idx``), ``sparse`` (accepted: the gradient is dense)."""
    if (getattr(idx, "_batched", False) or getattr(weight, "_batched", False)) and (
            max_norm is None and not scale_grad_by_freq):  # inside a batched vmap call
        from ...vmap_rules_r30 import embedding as batched

        return batched(idx, weight, padding_idx, EmbeddingFn)
    i = idx._data if isinstance(idx, Tensor) else idx
    if _is_foreign_tensor(i):  # a torch tensor of ids (a transformers user's tokenizer output)
        i = _foreign_to_numpy(i)
    if not hasattr(i, "dtype") or not hasattr(i.dtype, "kind"):
        i = np.asarray(i)
    if i.dtype.kind not in "iu":
        raise TypeError(f"embedding indices must be integers, got dtype {i.dtype}")
    check_class_ids(i, weight.shape[0], "embedding: index")
    if max_norm is not None:
        embedding_renorm_(weight, i, float(max_norm), float(norm_type))
    out = EmbeddingFn.apply(weight, i)
    if scale_grad_by_freq:  # torch's: each lookup's gradient over its index's count here
        xp = xp_of(i)
        flat = i.reshape(-1).astype(np.int64) % weight.shape[0]
        counts = xp.bincount(flat, minlength=weight.shape[0])
        out = _GradScale.apply(out, scale=(1.0 / counts[flat]).astype(out.dtype).reshape(
            i.shape + (1,)))
    if padding_idx is None:
        return out
    keep = (i != int(padding_idx) % weight.shape[0])[..., None]
    return where(keep, out, out.detach())


def embedding_renorm_(weight, idx, max_norm, norm_type):
    """torch's ``embedding_renorm_``: each row ``idx`` refers to whose norm exceeds
    ``max_norm`` is scaled to ``max_norm / (norm + 1e-7)`` of itself, in place, no graph."""
    w = weight._data
    xp = xp_of(w)
    used = xp.zeros(w.shape[0], dtype=bool)
    used[idx.reshape(-1)] = True
    norm = (xp.abs(w) ** norm_type).sum(1) ** (1.0 / norm_type)
    scale = xp.where(used & (norm > max_norm), max_norm / (norm + 1e-7), 1.0).astype(w.dtype)
    w *= scale[:, None]


# ---- rotary position embedding ----------------------------------------------------------------
class RotaryFn(Function):
    """Rotate each interleaved pair ``(x[2i], x[2i+1])`` of the last axis by an angle whose
    cosine and sine are given (broadcast to (..., D/2)). A rotation is orthogonal, so the
    backward rotates the gradient back by the negative angle; only cos and sin are kept."""

    def forward(self, x, cos=None, sin=None):
        self.cos, self.sin = cos, sin
        return _rotate_pairs(x, cos, sin)

    def backward(self, g):
        return _rotate_pairs(g, self.cos, -self.sin)


def _rotate_pairs(x, cos, sin):
    xp = xp_of(x)
    out = xp.empty_like(x)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x1 * cos + x0 * sin
    return out


def rotary_embedding(x: Tensor, cos, sin) -> Tensor:
    """Rotary position embedding on interleaved pairs (the GPT-J / ERNIE-4.5 layout): pair
    ``i`` of the last axis of ``x`` (..., D) is rotated by the angle whose ``cos``/``sin``
    (arrays broadcastable to (..., D/2), not differentiated) are given."""
    if x.shape[-1] % 2:
        raise ValueError(f"rotary_embedding needs an even last axis, got shape {tuple(x.shape)}")
    xp = x.xp
    cos = xp.asarray(cos, dtype=x.dtype)
    sin = xp.asarray(sin, dtype=x.dtype)
    return RotaryFn.apply(x, cos=cos, sin=sin)


# ---- attention ------------------------------------------------------------------------------
class SDPAFn(Function):
    """softmax(q k^T * scale + mask) v over (B, H, T, D); keeps q, k, v, the output and the
    probabilities (B, H, T, S). ``mask`` is additive (0 or -inf where a bool mask says no),
    broadcast to (..., T, S), not differentiated; ``causal`` adds the causal one, query i
    seeing keys j <= i + ``offset``."""

    def forward(self, q, k, v, causal=False, scale=None, mask=None, offset=0):
        xp = xp_of(q)
        t, s = q.shape[-2], k.shape[-2]
        self.scale = scale = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
        # the scale goes on q (T*D work) rather than on the (T, S) scores
        att = mm(q * q.dtype.type(scale), xp.swapaxes(k, -1, -2))
        if causal:
            att += xp.triu(xp.full((t, s), -np.inf, dtype=att.dtype), k=offset + 1)
        if mask is not None:
            att = att + mask if att.shape != np.broadcast_shapes(att.shape, mask.shape) \
                else xp.add(att, mask, out=att)
        top = att.max(axis=-1, keepdims=True)
        top[xp.isneginf(top)] = 0  # a row that sees no key: probabilities 0 (torch's
        att -= top                 # _safe_softmax; it was nan), its gradients 0
        xp.exp(att, out=att)
        # a row's sum is >= 1 (its maximum gives exp(0)) unless it sees no key (0)
        att /= xp.maximum(att.sum(axis=-1, keepdims=True), 1)
        out = mm(att, v)
        self.save_for_backward(q, k, v, att, out)
        return out

    def backward(self, g):
        q, k, v, p, out = self.saved
        xp = xp_of(g)
        sc = g.dtype.type(self.scale)
        gv = mm(xp.swapaxes(p, -1, -2), g)
        gp = mm(g, xp.swapaxes(v, -1, -2))
        # softmax backward in place: gs = p * (gp - rowsum(gp * p)), and
        # rowsum(gp * p) = rowsum(g * out): a (T, D) product instead of a (T, S) one
        gp -= (g * out).sum(axis=-1, keepdims=True)
        gp *= p
        gq = mm(gp, k)
        gq *= sc
        gk = mm(xp.swapaxes(gp, -1, -2), q)
        gk *= sc
        if gv.shape != v.shape:  # a broadcast mask widened the batch axes
            gq, gk, gv = (_sum_to(gq, q.shape), _sum_to(gk, k.shape), _sum_to(gv, v.shape))
        return gq, gk, gv


def _sum_to(g, shape):
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _additive_mask(attn_mask, like):
    """torch's ``attn_mask`` as an additive float array: a bool mask's True attends (0) and
    False does not (-inf); a float mask is added as it is."""
    m = attn_mask._data if isinstance(attn_mask, Tensor) else attn_mask
    xp = like.xp
    m = xp.asarray(m)
    if m.dtype.kind == "b":
        return xp.where(m, xp.zeros((), like.dtype), xp.full((), -np.inf, like.dtype))
    if m.dtype.kind != "f":
        raise TypeError(f"attn_mask must be bool (True attends) or float (added to the "
                        f"scores), got dtype {m.dtype}")
    return m.astype(like.dtype, copy=False)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask=None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale=None,
                                 enable_gqa: bool = False, *, causal=None) -> Tensor:
    """torch's attention over (B, H, T, D) tensors (any leading axes): not causal unless
    ``is_causal`` (query i sees keys j <= i, torch's top-left alignment); skiff's older
    ``causal=True`` aligns bottom-right instead (query i sees j <= i + S - T: the last T of S
    cached positions), the same when T == S. ``attn_mask`` broadcast to (..., T, S), bool
    (True attends) or float (added to the scores; differentiated when it requires a
    gradient, as torch's: a learned position bias); ``dropout_p`` drops
    attention probabilities whenever it is given (as torch's: pass 0.0 in eval)."""
    if _ac.LOW is not None:  # autocast("cpu"): torch's lower-precision op
        query, key, value = _ac.low(query, key, value)
    out = _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                causal=causal)
    if (isinstance(out, Tensor) and out.dtype != query.dtype and query.dtype.itemsize == 2
            and query.dtype == key.dtype == value.dtype):
        out = out.to(dtype=query.dtype)  # bfloat16 in, bfloat16 out (torch's)
    return out


def _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, *,
          causal=None):
    q, k, v = query, key, value
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        # grouped-query attention (torch's enable_gqa): each key/value head serves
        # Hq / Hkv consecutive query heads
        hq, hk = q.shape[-3], k.shape[-3]
        if hk == 0 or hq % hk or v.shape[-3] != hk:
            raise ValueError(f"scaled_dot_product_attention(enable_gqa=True): the query's "
                             f"{hq} heads must be a multiple of the key's {hk} and the "
                             f"value's {v.shape[-3]} heads")
        k = k.repeat_interleave(hq // hk, dim=-3)
        v = v.repeat_interleave(hq // hk, dim=-3)
    if q.shape[-1] != k.shape[-1] or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"attention shapes do not fit: q {tuple(q.shape)}, k {tuple(k.shape)}, "
            f"v {tuple(v.shape)}"
        )
    offset = k.shape[-2] - q.shape[-2] if causal else 0
    is_causal = bool(is_causal if causal is None else causal)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True (give attn_mask or is_causal, not both)")
    # a float mask that needs a gradient (a learned relative-position bias, ALiBi slopes):
    # added as a tensor in the composed path, so it gets torch's gradient (round 44: None)
    learned = (isinstance(attn_mask, Tensor) and attn_mask.requires_grad
               and attn_mask.dtype.kind == "f")
    mask = None if attn_mask is None or learned else _additive_mask(attn_mask, q)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    if dropout_p == 0.0 and not learned:
        return SDPAFn.apply(q, k, v, causal=is_causal, scale=scale, mask=mask, offset=offset)
    from .activations import dropout, softmax  # composed: the fused backward assumes none

    sc = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    att = (q * sc) @ k.swapaxes(-1, -2)
    if is_causal:
        t, s = q.shape[-2], k.shape[-2]
        mask = q.xp.triu(q.xp.full((t, s), -np.inf, dtype=q.dtype), k=offset + 1)
    if mask is not None:
        att = att + Tensor._make(mask, False, None, 0)
    if learned:
        att = att + attn_mask.to(dtype=att.dtype)
    probs = softmax(att, axis=-1)
    return (dropout(probs, dropout_p) if dropout_p else probs) @ v


def packed_causal_attention(q: Tensor, k: Tensor, v: Tensor, cu_seqlens, scale=None) -> Tensor:
    """Causal attention over packed sequences: q, k, v (T_total, H, D), sequence ``i`` is rows
    ``cu_seqlens[i]:cu_seqlens[i+1]``; no query attends across a sequence boundary."""
    from ...packed_attention import packed_attention

    return packed_attention(q, k, v, cu_seqlens, scale=scale)

"""Attention for encoders: ``MultiheadAttention`` and ``TransformerEncoderLayer`` /
``TransformerEncoder`` with torch's parameter names, layouts, initialisation and defaults,
so a torch ``state_dict`` loads as it is (the tests compare outputs and gradients).

Attention here is bidirectional (every position sees every key) unless a mask says
otherwise: ``key_padding_mask`` (N, S), True where a key is padding, and ``attn_mask`` (L, S)
(boolean, True = not allowed, or additive floats), or ``is_causal``. Without masks the fused
attention node of :mod:`.functional` runs; with one, the scores are masked before a softmax.
"""

from __future__ import annotations

import math

import numpy as np

from ..default_dtype import default_float
from ..tensor import Tensor
from . import functional as F
from .layers import GELU, Dropout, LayerNorm, Linear, ReLU, _positive, normal_, uniform_
from .module import Module, ModuleList, Parameter

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


class NonDynamicallyQuantizableLinear(Linear):
    """torch's class of ``MultiheadAttention.out_proj`` (a plain Linear; its name shows in
    the repr)."""


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention (same query, key and value width): ``in_proj_weight``
    (3E, E), ``in_proj_bias``, ``out_proj``; returns ``(output, weights)`` with the weights
    averaged over heads when ``need_weights`` (torch's: those the output used, after
    dropout, with their gradient), else None."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False,
                 generator=None, dtype=None, *, kdim=None, vdim=None, add_bias_kv=False,
                 add_zero_attn=False, device=None):
        super().__init__()
        dtype = default_float(dtype)
        self.embed_dim = _positive("embed_dim", embed_dim)
        self.num_heads = _positive("num_heads", num_heads)
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
        self.dropout, self.batch_first = float(dropout), bool(batch_first)
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else _positive("kdim", kdim)
        self.vdim = embed_dim if vdim is None else _positive("vdim", vdim)
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        if self._qkv_same_embed_dim:
            bound = math.sqrt(6.0 / (embed_dim + 3 * embed_dim))  # torch: xavier_uniform_
            self.in_proj_weight = Parameter(uniform_((3 * embed_dim, embed_dim), bound,
                                                     generator, dtype), dtype=dtype)
        else:  # torch's separate projections (keys and values of other widths)
            self.in_proj_weight = None
            for name, width in (("q", embed_dim), ("k", self.kdim), ("v", self.vdim)):
                b = math.sqrt(6.0 / (embed_dim + width))
                setattr(self, f"{name}_proj_weight", Parameter(
                    uniform_((embed_dim, width), b, generator, dtype), dtype=dtype))
        self.in_proj_bias = (Parameter(np.zeros(3 * embed_dim, dtype), dtype=dtype)
                             if bias else None)
        if add_bias_kv:  # torch's: a learned key and value appended to every sequence
            std = math.sqrt(1.0 / embed_dim)  # xavier_normal_ of (1, 1, E)
            self.bias_k = Parameter(normal_((1, 1, embed_dim), std, generator, dtype),
                                    dtype=dtype)
            self.bias_v = Parameter(normal_((1, 1, embed_dim), std, generator, dtype),
                                    dtype=dtype)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = bool(add_zero_attn)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        generator=generator, dtype=dtype)
        if bias:
            self.out_proj.bias._data[...] = 0
        self.attn_dropout = Dropout(dropout, generator=generator)  # not in torch's repr
        if device is not None:
            self.to(device)

    _REPR_HIDDEN = ("attn_dropout",)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        unbatched = query.ndim == 2
        q_in, k_in, v_in = (t.unsqueeze(1) if unbatched else
                            (t.transpose((1, 0, 2)) if self.batch_first else t)
                            for t in (query, key, value))  # (L, N, E)
        L, N, E = q_in.shape
        S = k_in.shape[0]
        h, d = self.num_heads, E // self.num_heads
        w, b = self.in_proj_weight, self.in_proj_bias
        if w is not None:
            wq, wk, wv = w.split(E, axis=0)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        bq, bk, bv = b.split(E, axis=0) if b is not None else (None, None, None)

        def heads(x, weight, bias, n):  # (n, N, E) -> (N, h, n, d)
            y = F.linear(x, weight, bias).reshape(n, N, h, d)
            return y.transpose((1, 2, 0, 3))

        q, k, v = heads(q_in, wq, bq, L), heads(k_in, wk, bk, S), heads(v_in, wv, bv, S)
        learned = (isinstance(attn_mask, Tensor) and attn_mask.requires_grad
                   and attn_mask.dtype.kind == "f")
        if learned:  # a float mask that needs its gradient (round 44: it got None): checked,
            # then added as a tensor, (L, S) or (N * h, L, S) as torch's
            self._mask(None, attn_mask.detach(), False, N, L, S, q, h, unbatched)
            mask = self._mask(key_padding_mask, None, is_causal, N, L, S, q, h, unbatched)
            am = attn_mask.to(dtype=q.dtype)
            am = am.reshape(N, h, L, S) if am.ndim == 3 else am.reshape(1, 1, L, S)
            mask = am if mask is None else mask + am
        else:
            mask = self._mask(key_padding_mask, attn_mask, is_causal, N, L, S, q, h, unbatched)
        extra = []  # torch's add_bias_kv, then add_zero_attn: keys every query may attend
        if getattr(self, "bias_k", None) is not None:
            extra.append((self.bias_k.reshape(1, h, 1, d).expand(N, h, 1, d),
                          self.bias_v.reshape(1, h, 1, d).expand(N, h, 1, d)))
        if getattr(self, "add_zero_attn", False):
            zero = Tensor(q.xp.zeros((N, h, 1, d), dtype=q.dtype), dtype=q.dtype)
            extra.append((zero, zero))
        if extra:
            from ..tensor import cat

            k = cat([k] + [e[0] for e in extra], axis=2)
            v = cat([v] + [e[1] for e in extra], axis=2)
            if mask is not None and mask.requires_grad:  # round 44 (h12): a learned mask
                # lost its gradient here (padded as an array): zeros joined as a tensor
                zeros = mask.xp.zeros(tuple(mask.shape[:-1]) + (len(extra),), dtype=mask.dtype)
                mask = cat([mask, Tensor(zeros, dtype=mask.dtype)], axis=-1)
            elif mask is not None:  # the appended keys are never masked
                pad = [(0, 0)] * (mask.ndim - 1) + [(0, len(extra))]
                mask = Tensor(mask.xp.pad(mask._data, pad), dtype=mask.dtype)
        drop = self.dropout if self.training else 0.0
        weights = None
        if mask is None and not drop and not need_weights:
            out = F.scaled_dot_product_attention(q, k, v, causal=False)
        else:
            scores = (q * (1.0 / math.sqrt(d))) @ k.swapaxes(-1, -2)
            if mask is not None:
                scores = scores + mask
            p = self.attn_dropout(F.softmax(scores, axis=-1))
            out = p @ v
            if need_weights:  # torch's: the probabilities used (after dropout), in the graph
                weights = p.mean(axis=1) if average_attn_weights else p
                if unbatched:
                    weights = weights.squeeze(0)
        out = out.transpose((2, 0, 1, 3)).reshape(L, N, E)  # (L, N, E)
        out = self.out_proj(out)
        if unbatched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose((1, 0, 2))
        return out, weights

    @staticmethod
    def _mask(key_padding_mask, attn_mask, is_causal, N, L, S, like, h=None, unbatched=None):
        """One additive mask broadcastable to (N, h, L, S) (0 or -inf, or a float mask's
        values), or None; ``attn_mask`` may be (L, S) or torch's (N * h, L, S)."""
        xp, dtype = like.xp, like.dtype
        total = None

        def add(m):
            nonlocal total
            total = m if total is None else total + m

        if key_padding_mask is not None:
            kp = key_padding_mask._data if isinstance(key_padding_mask, Tensor) else \
                xp.asarray(key_padding_mask)
            _mask_dtype(kp, "key_padding_mask")
            if unbatched is not None and kp.ndim != (1 if unbatched else 2):
                kind = "unbatched (2-D)" if unbatched else "batched (3-D)"
                raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be "
                                     f"`None` or {1 if unbatched else 2}-D but found "
                                     f"{kp.ndim}-D tensor instead")
            if kp.ndim == 1:
                kp = kp[None]
            for i, want in enumerate((N, S)):  # torch's words (AssertionError), then skiff's
                if kp.shape[i] != want:
                    raise AssertionError(
                        f"Expected key_padded_mask.shape[{i}] to be {want}, but got "
                        f"{kp.shape[i]} (key_padding_mask must have shape (N, S) = {(N, S)}, "
                        f"got {tuple(kp.shape)})")
            add(_additive(xp, kp, dtype)[:, None, None, :])
        if attn_mask is not None:
            am = attn_mask._data if isinstance(attn_mask, Tensor) else xp.asarray(attn_mask)
            _mask_dtype(am, "attn_mask")
            if am.ndim == 3 and h is not None and am.shape == (N * h, L, S):
                add(_additive(xp, am, dtype).reshape(N, h, L, S))
            elif am.ndim == 2 and am.shape == (L, S):
                add(_additive(xp, am, dtype)[None, None])
            elif am.ndim in (2, 3):
                want = (L, S) if am.ndim == 2 else (N * (h or 1), L, S)
                raise RuntimeError(f"The shape of the {am.ndim}D attn_mask is "
                                   f"torch.Size({list(am.shape)}), but should be {want}.")
            elif unbatched is not None:
                kind = "unbatched (2-D)" if unbatched else "batched (3-D)"
                raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, "
                                     f"2-D or 3-D but found {am.ndim}-D tensor instead")
            else:
                raise RuntimeError(f"attn_mask's dimension {am.ndim} is not supported")
        if is_causal:
            add(xp.triu(xp.full((L, S), -np.inf, dtype=dtype), k=1)[None, None])
        return None if total is None else Tensor(total, dtype=dtype)  # a float64 mask stays


def _mask_dtype(mask, name):
    """torch's ``_canonical_mask``: a mask is boolean (True = not allowed) or additive floats;
    integers (a 0/1 padding mask) are refused, not added as they are."""
    if mask.dtype != bool and mask.dtype.kind not in "fc":
        raise AssertionError(f"only bool and floating types of {name} are supported")


def _check_masks(**masks):
    """The dtype check of torch's layers, in their argument names."""
    for name, m in masks.items():
        if m is not None:
            _mask_dtype(m._data if isinstance(m, Tensor) else np.asarray(m), name)


def _additive(xp, mask, dtype):
    """A boolean mask (True = not allowed) as 0 / -inf, or float masks as they are."""
    if mask.dtype == bool:
        return xp.where(mask, xp.asarray(-np.inf, dtype=dtype), xp.asarray(0, dtype=dtype))
    return mask.astype(dtype)


def _activation_fn(activation):
    """torch's ``activation`` of the transformer layers: "relu"/"gelu" become ``F.relu``/
    ``F.gelu``; any callable (``F.silu``, an ``nn.GELU("tanh")`` module: then a submodule, as
    torch's) is kept as it is."""
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    if not callable(activation):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _relu_or_gelu(activation):
    """torch's ``activation_relu_or_gelu``: 1 for ReLU, 2 for GELU, 0 for anything else."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: self-attention and a ReLU (or GELU) feed-forward,
    each with dropout and a residual; post-norm by default (``norm_first`` for pre-norm)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 generator=None, dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        activation = _activation_fn(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, generator=generator,
                                            dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, generator=generator,
                              dtype=dtype)
        self.dropout = Dropout(dropout, generator=generator)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, generator=generator,
                              dtype=dtype)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout, generator=generator)
        self.dropout2 = Dropout(dropout, generator=generator)
        self.activation = activation
        self.activation_relu_or_gelu = _relu_or_gelu(activation)

    def _sa(self, x, attn_mask, key_padding_mask, is_causal):
        y, _ = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False,
                              attn_mask=attn_mask, is_causal=is_causal)
        return self.dropout1(y)

    def _ff(self, x):
        h = self.linear1(x)
        h = self.activation(h)
        return self.dropout2(self.linear2(self.dropout(h)))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        _check_masks(src_key_padding_mask=src_key_padding_mask, src_mask=src_mask)
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff(x))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` (``layers.0``, ...), then
    ``norm`` when given (torch's names)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        import copy

        # torch's fast-path switches: skiff has no nested tensors; accepted for torch's code
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check
        self.use_nested_tensor = enable_nested_tensor  # torch's flag (skiff never nests)
        if not isinstance(encoder_layer, Module):  # torch's: any layer taking its arguments
            raise TypeError(f"TransformerEncoder repeats a Module (a TransformerEncoderLayer or "
                            f"alike), got {type(encoder_layer).__name__}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer)
                                  for _ in range(_positive("num_layers", num_layers))])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=False):
        _check_masks(src_key_padding_mask=src_key_padding_mask, mask=mask)
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=is_causal)
        return self.norm(x) if self.norm is not None else x



class _MhaArgs:
    """The attributes ``MultiheadAttention.forward`` reads, from the functional's arguments."""

    _mask = staticmethod(MultiheadAttention._mask)
    batch_first = False

    def __init__(self, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                 dropout_p, out_proj_weight, out_proj_bias, training, q, k, v):
        self.num_heads, self.in_proj_bias = num_heads, in_proj_bias
        self.in_proj_weight = in_proj_weight if q is None else None
        self.q_proj_weight, self.k_proj_weight, self.v_proj_weight = q, k, v
        self.bias_k, self.bias_v, self.add_zero_attn = bias_k, bias_v, add_zero_attn
        self.dropout, self.training = float(dropout_p), bool(training)
        self.out_proj = lambda t: F.linear(t, out_proj_weight, out_proj_bias)
        self.attn_dropout = lambda p: F.dropout(p, self.dropout, self.training)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """torch's ``F.multi_head_attention_forward`` (sequence-first (L, N, E) or unbatched
    (L, E) inputs; OpenAI CLIP's attention pooling calls it with separate projections): the
    computation of ``nn.MultiheadAttention`` on the weights given."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k/static_v are not "
                                  "supported here")
    if query.shape[-1] != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {query.shape[-1]}")
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                                 "k_proj_weight or v_proj_weight is None")
    else:
        q_proj_weight = k_proj_weight = v_proj_weight = None
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    args = _MhaArgs(num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                    dropout_p, out_proj_weight, out_proj_bias, training, q_proj_weight,
                    k_proj_weight, v_proj_weight)
    return MultiheadAttention.forward(args, query, key, value,
                                      key_padding_mask=key_padding_mask,
                                      need_weights=need_weights, attn_mask=attn_mask,
                                      average_attn_weights=average_attn_weights,
                                      is_causal=is_causal)

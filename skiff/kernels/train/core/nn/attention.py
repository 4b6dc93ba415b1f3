"""Causal self-attention (nanoGPT layout) and a pre-norm transformer block."""

from __future__ import annotations

from ..default_dtype import default_float
from ..tensor import split
from . import functional as F
from .layers import GELU, Dropout, LayerNorm, Linear
from .module import Module

__all__ = ["CausalSelfAttention", "TransformerMLP", "TransformerBlock"]


class CausalSelfAttention(Module):
    """Multi-head causal self-attention with a fused ``c_attn`` Linear(d, 3d) and ``c_proj``.

    The weights map 1:1 onto nanoGPT's ``CausalSelfAttention`` (q, k, v are the three
    d-wide slices of ``c_attn``'s output, in that order).
    """

    def __init__(self, d_model, n_heads, bias=True, dropout=0.0, generator=None,
                 dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.d_model, self.n_heads = d_model, n_heads
        self.c_attn = Linear(d_model, 3 * d_model, bias=bias, generator=generator, dtype=dtype)
        self.c_proj = Linear(d_model, d_model, bias=bias, generator=generator, dtype=dtype)
        self.resid_dropout = Dropout(dropout, generator=generator)

    def forward(self, x):
        """x (B, T, C) -> (B, T, C)."""
        b, t, c = x.shape
        h = self.n_heads
        qkv = self.c_attn(x)  # (B, T, 3C)
        # (B, T, 3, H, D) -> (3, B, H, T, D) -> three (B, H, T, D) views (a Split node: its
        # backward is one concatenate, not three zero-filled scatters)
        qkv = qkv.reshape(b, t, 3, h, c // h).permute(2, 0, 3, 1, 4)
        q, k, v = (z.reshape(b, h, t, c // h) for z in split(qkv, 1, axis=0))
        y = F.scaled_dot_product_attention(q, k, v, causal=True)  # (B, H, T, D)
        y = y.permute(0, 2, 1, 3).reshape(b, t, c)
        return self.resid_dropout(self.c_proj(y))

    def forward_packed(self, x, cu_seqlens):
        """x (T_total, C) holding packed sequences marked by ``cu_seqlens`` -> (T_total, C)."""
        n, c = x.shape
        h = self.n_heads
        qkv = self.c_attn(x).reshape(n, 3, h, c // h)  # (T, 3, H, D)
        q, k, v = (z.reshape(n, h, c // h) for z in split(qkv, 1, axis=1))
        y = F.packed_causal_attention(q, k, v, cu_seqlens).reshape(n, c)
        return self.resid_dropout(self.c_proj(y))

    def extra_repr(self):
        return f"d_model={self.d_model}, n_heads={self.n_heads}"


class TransformerMLP(Module):
    """Linear(d, 4d) -> GELU(tanh) -> Linear(4d, d) (nanoGPT's ``c_fc`` / ``c_proj``)."""

    def __init__(self, d_model, hidden=None, bias=True, dropout=0.0, generator=None,
                 dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        hidden = hidden or 4 * d_model
        self.c_fc = Linear(d_model, hidden, bias=bias, generator=generator, dtype=dtype)
        self.gelu = GELU("tanh")
        self.c_proj = Linear(hidden, d_model, bias=bias, generator=generator, dtype=dtype)
        self.dropout = Dropout(dropout, generator=generator)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class TransformerBlock(Module):
    """Pre-norm block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, d_model, n_heads, bias=True, dropout=0.0, generator=None,
                 dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        self.ln_1 = LayerNorm(d_model, bias=bias, dtype=dtype)
        self.attn = CausalSelfAttention(d_model, n_heads, bias, dropout, generator, dtype)
        self.ln_2 = LayerNorm(d_model, bias=bias, dtype=dtype)
        self.mlp = TransformerMLP(d_model, bias=bias, dropout=dropout, generator=generator,
                                  dtype=dtype)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))

    def forward_packed(self, x, cu_seqlens):
        x = x + self.attn.forward_packed(self.ln_1(x), cu_seqlens)
        return x + self.mlp(self.ln_2(x))

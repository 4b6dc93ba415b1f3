"""torch's ``nn.TransformerDecoderLayer``, ``nn.TransformerDecoder`` and ``nn.Transformer``
(encoder-decoder), with torch's parameter names (``self_attn``, ``multihead_attn``,
``linear1``/``linear2``, ``norm1``-``norm3``; ``encoder.layers.N...``, ``decoder.norm``), masks
and defaults, on encoder.py's ``MultiheadAttention`` and encoder stack, so a torch state dict
loads as it is."""

from __future__ import annotations

import copy

import numpy as np

from ..default_dtype import default_float
from ..tensor import Tensor
from .encoder import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer, _activation_fn
from .layers import Dropout, LayerNorm, Linear, _positive
from .module import Module, ModuleList

__all__ = ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


class TransformerDecoderLayer(Module):
    """Self-attention on the target, attention to the encoder's ``memory``, a ReLU (or GELU)
    feed-forward; each with dropout and a residual, post-norm unless ``norm_first``."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None, generator=None):
        super().__init__()
        dtype = default_float(dtype)
        activation = _activation_fn(activation)
        kw = dict(dropout=dropout, bias=bias, batch_first=batch_first, generator=generator,
                  dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, generator=generator,
                              dtype=dtype)
        self.dropout = Dropout(dropout, generator=generator)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, generator=generator,
                              dtype=dtype)
        self.norm_first = bool(norm_first)
        for k in (1, 2, 3):  # torch's order: the norms, then the dropouts
            setattr(self, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias,
                                                dtype=dtype))
        for k in (1, 2, 3):
            setattr(self, f"dropout{k}", Dropout(dropout, generator=generator))
        self.activation = activation
        if device is not None:
            self.to(device)

    def _sa(self, x, mask, pad, causal):
        y, _ = self.self_attn(x, x, x, key_padding_mask=pad, need_weights=False,
                              attn_mask=mask, is_causal=bool(causal))
        return self.dropout1(y)

    def _mha(self, x, mem, mask, pad, causal):
        y, _ = self.multihead_attn(x, mem, mem, key_padding_mask=pad, need_weights=False,
                                   attn_mask=mask, is_causal=bool(causal))
        return self.dropout2(y)

    def _ff(self, x):
        h = self.linear1(x)
        h = self.activation(h)
        return self.dropout3(self.linear2(self.dropout(h)))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                              memory_is_causal)
            return x + self._ff(self.norm3(x))
        x = self.norm1(x + self._sa(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha(x, memory, memory_mask, memory_key_padding_mask,
                                     memory_is_causal))
        return self.norm3(x + self._ff(x))


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` (``layers.0``, ...), then ``norm``."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        if not isinstance(decoder_layer, Module):  # torch's: any layer taking its arguments
            raise TypeError(f"TransformerDecoder repeats a Module (a TransformerDecoderLayer or "
                            f"alike), got {type(decoder_layer).__name__}")
        self.layers = ModuleList([copy.deepcopy(decoder_layer)
                                  for _ in range(_positive("num_layers", num_layers))])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """torch.nn.Transformer: an encoder and a decoder stack, each closed by a LayerNorm;
    parameters of two or more dimensions are Xavier-uniform at first, as torch's."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        kw = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                  layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first,
                  bias=bias, dtype=dtype)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **kw), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **kw), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        from .init import xavier_uniform_

        for p in self.parameters():
            if p.ndim > 1:
                xavier_uniform_(p)
        if device is not None:
            self.to(device)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=bool(src_is_causal))
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) floats: 0 on and below the diagonal, -inf above (torch's causal mask)."""
        dt = np.dtype(default_float(dtype))
        m = np.triu(np.full((sz, sz), -np.inf, dtype=dt), k=1)
        return Tensor(m, dtype=dt, device=device)

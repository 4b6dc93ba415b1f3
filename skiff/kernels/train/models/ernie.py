"""ERNIE-4.5: the dense (0.3B) and mixture-of-experts (21B-A3B, 300B-A47B) decoders.

The math is the reference's (transformers' ``Ernie4_5ForCausalLM`` and
``Ernie4_5_MoeForCausalLM``), and the parameter names are those of the published Hugging Face
checkpoints, so a checkpoint maps 1:1 onto :meth:`ErnieForCausalLM.state_dict`:

* pre-norm blocks: ``x + attn(rms(x))``, then ``x + mlp(rms(x))``; RMSNorm in float32;
* grouped-query attention (``num_key_value_heads`` k/v heads, each shared by
  ``num_attention_heads / num_key_value_heads`` query heads), scale ``head_dim ** -0.5``;
* the rotary embedding on *interleaved* pairs ``(x[2i], x[2i+1])`` with angle
  ``position * rope_theta ** (-2i / head_dim)``;
* SwiGLU MLP ``down(silu(gate(x)) * up(x))``;
* MoE layers (``moe_layer_start_index <= l <= moe_layer_end_index`` and
  ``(l + 1) % moe_layer_interval == 0``): a float32 router ``softmax(gate(x))``, the top
  ``moe_k`` experts chosen by ``probs + e_score_correction_bias`` while their weights are the
  plain probabilities renormalised to sum 1 (``/ max(sum, moe_norm_min)``), plus
  ``moe_num_shared_experts`` shared experts as one wider MLP that every token passes through;
* tied or untied ``lm_head`` (``tie_word_embeddings``); the MoE head has a bias when
  ``use_bias``.

Training takes ``(x, y)`` blocks or a :class:`~skiff.kernels.train.data.PackedBatch`;
:meth:`ErnieForCausalLM.generate` decodes with a key/value cache (greedy unless asked to
sample, as in transformers). Loading and saving checkpoints: :mod:`.hf_checkpoint`.
"""

from __future__ import annotations

import numpy as np

from ..core import nn
from ..core.nn import functional as F
from ..core.nn.layers import normal_, skipping_init
from ..core.recompute import checkpoint
from ..core.tensor import Tensor, cat, is_grad_enabled, no_grad
from ..data import PackedBatch
from .ernie_cache import KVCache
from .ernie_config import ARCHITECTURES, PUBLISHED, ErnieConfig  # noqa: F401 (imported from here too)
from .ernie_generate import (
    StopStrings,
    _check_sampling,
    _mask_rows,
    generate_packed,
    has_hole,
    sampling_rng,
)
from .ernie_generate_hooks import UserHooks
from .ernie_generate_options import (
    GenerateOutput,
    StepChooser,
    expand_rows,
    new_token_counts,
    resolve_options,
)
from .ernie_generate_processors import OPTIONS as PROCESSOR_OPTIONS
from .ernie_generate_processors import ExtraProcessors
from .ernie_generate_torch import torch_like_output
from .ernie_generation_config import as_generation_config
from .ernie_hf_api import TransformersModelApi
from .ernie_infer import forward_fast, forward_packed_fast, forward_step_fast
from .ernie_layers import (  # noqa: F401 (the layers' classes, imported from here too)
    ErnieAttention,
    ErnieDecoderLayer,
    ErnieMLP,
    ErnieModel,
    ErnieMoE,
    ErnieMoeStatics,
    rows_linear,
)
from .gpt import _as_index, _host

__all__ = ["ErnieConfig", "ErnieForCausalLM", "CausalLMOutput", "KVCache", "PUBLISHED",
           "num_parameters"]

class CausalLMOutput:
    """``loss`` and ``logits`` of ``model(ids, labels=...)``, read as transformers' output
    is: by attribute, by key, or ``out[0]`` (the loss), ``out[1]`` (the logits)."""

    past_key_values = cache = None  # as transformers' output; a forward with labels keeps none

    def __init__(self, loss, logits, hidden_states=None, attentions=None, aux_loss=None,
                 router_logits=None):
        self.loss, self.logits, self.hidden_states = loss, logits, hidden_states
        self.attentions = attentions
        self.aux_loss, self.router_logits = aux_loss, router_logits  # MoE, as transformers'

    def __getitem__(self, key):
        if isinstance(key, str):
            return getattr(self, key)
        return tuple(v for v in (self.loss, self.aux_loss, self.logits, self.hidden_states,
                                 self.attentions, self.router_logits) if v is not None)[key]

    def __repr__(self) -> str:
        loss = "None" if self.loss is None else f"{float(self.loss.item()):.6g}"
        more = "" if self.hidden_states is None else \
            f", hidden_states={len(self.hidden_states)} x {self.hidden_states[0].shape}"
        return f"CausalLMOutput(loss={loss}, logits={self.logits.shape}{more})"


class OutputLogits(Tensor):
    """The logits ``model(ids)`` returns: a Tensor (B, T, V) which also reads as
    transformers' output object, so ``model(**enc).logits`` works (``.logits`` is the
    tensor itself, ``.loss`` None)."""

    loss = None
    _past = None  # the cache (a forward that continued one), or a function giving it

    @property
    def logits(self):
        return self

    @property
    def past_key_values(self):
        """The keys and values of this forward's positions (``ernie_past``): the cache the
        call continued, or (a plain ``model(ids)``) one built when first read."""
        past = self._past
        if callable(past) and not hasattr(past, "get_seq_length"):
            self._past = past = past()
        return past

    cache = past_key_values  # transformers 5's newer name


class ErnieForCausalLM(TransformersModelApi, nn.Module):
    """An ERNIE-4.5 language model (dense or MoE, as its config says).

    Build one from a checkpoint with :func:`skiff.models.from_pretrained`; ``ErnieForCausalLM(
    ErnieConfig(...))`` makes a randomly initialised one. ``model(input_ids)`` returns logits
    (B, T, V).
    """

    def __init__(self, config: ErnieConfig, dtype=np.float32):
        super().__init__()
        self.config = cfg = config
        self.model = ErnieModel(cfg, dtype)
        self.model.__dict__["_owner"] = self  # model.model(ids) runs through this (no child)
        if cfg.tie_word_embeddings:
            self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size,
                                     bias=cfg.is_moe and cfg.use_bias, dtype=dtype)
            self.lm_head.weight = self.model.embed_tokens.weight
        else:
            self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size,
                                     bias=cfg.is_moe and cfg.use_bias, dtype=dtype)
        D = cfg.head_dim
        # the reference computes the angles in float32
        self.inv_freq = (1.0 / (np.float32(cfg.rope_theta)
                                ** (np.arange(0, D, 2, dtype=np.float32) / np.float32(D))))
        self.generation_config = {}  # a GenerationDefaults (ernie_generation_config)
        # activation checkpointing (the planner's ``recompute``, ``Trainer(recompute=True)``):
        # each decoder layer keeps only its input and is recomputed in backward
        self.recompute = False
        if not skipping_init():  # a fresh model: the reference's initialisation
            self._init_weights(float(cfg.extra.get("initializer_range", 0.02)))

    def _init_weights(self, std: float) -> None:
        """Linear and embedding weights N(0, std^2), biases zero, as transformers
        initialises a fresh ERNIE-4.5 (``initializer_range``); the router too."""
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                w = module.weight
                w._data = w.xp.asarray(normal_(tuple(w.shape), std, dtype=w.dtype))
                if getattr(module, "bias", None) is not None:
                    module.bias._data[...] = 0

    # ---- forward -----------------------------------------------------------------------------
    def rotary(self, positions):
        """cos, sin (T, D/2) of the rotary angles at integer ``positions`` (host or device)."""
        pos = np.asarray(_host(positions), dtype=np.float32)
        freqs = pos[:, None] * self.inv_freq[None, :]
        xp = self.model.embed_tokens.weight.xp
        return xp.asarray(np.cos(freqs)), xp.asarray(np.sin(freqs))

    def __call__(self, *args, labels=None, **kwargs):
        """``model(ids)`` is :meth:`forward`'s logits; ``model(ids, labels=ids)`` (as in
        transformers) is a :class:`CausalLMOutput` with ``loss`` too: the mean cross-entropy
        of each position's logits against the next position's label (the shift is made
        here, as transformers makes it; labels of -100 are left out). With a padded
        ``attention_mask`` a label predicted from a padded position is left out too (with
        left padding, each row's first real token: transformers counts it with what its
        attention makes of a row with nothing to attend to, which differs between its own
        eager and sdpa attention; skiff's loss is transformers' with that label -100).
        ``output_hidden_states=True``: the output has ``hidden_states`` too
        (``ernie_hidden``); ``output_attentions=True``: ``attentions``, each layer's
        (B, H, T, T) weights as transformers' eager attention gives them
        (``ernie_attentions``); ``position_ids`` that restart (transformers'
        ``DataCollatorWithFlattening``): each restart begins a sequence that attends to
        itself only, as transformers reads them (``ernie_positions``). An MoE model with
        ``output_router_logits`` (the call's, else with labels the config's) returns
        ``aux_loss`` (:meth:`load_balancing_loss`, unscaled) and ``router_logits`` (each MoE
        layer's (tokens, E) router logits), and with labels adds ``router_aux_loss_coef *
        aux_loss`` to the loss, as transformers does; ``model(ids)`` alone stays the
        logits."""
        use_cache = kwargs.pop("use_cache", None)
        past = kwargs.pop("past_key_values", None)
        if past is None and kwargs.get("cache") is not None and (
                not isinstance(kwargs["cache"], KVCache) or hasattr(kwargs["cache"], "crop")):
            past = kwargs.pop("cache")  # transformers 5's newer name
        embeds = kwargs.pop("inputs_embeds", None)
        if embeds is not None:  # transformers' inputs_embeds (ernie_embeds)
            from .ernie_embeds import check_embeds_call

            check_embeds_call(args, dict(kwargs, cache=past))
        if past is not None:
            return self._call_with_past(past, args, kwargs, labels)
        keep = kwargs.pop("logits_to_keep", 0)
        num_items = kwargs.pop("num_items_in_batch", None)
        if labels is not None and not (isinstance(keep, int) and keep == 0):
            raise ValueError("logits_to_keep with labels: the loss needs every position's "
                             "logits (leave logits_to_keep out)")
        want_hidden = bool(kwargs.pop("output_hidden_states", False))
        want_attn = bool(kwargs.pop("output_attentions", False))
        want_router = kwargs.pop("output_router_logits", None)
        positions = kwargs.pop("position_ids", None)
        if positions is None and embeds is None and not (want_attn or want_hidden):
            positions = _hole_positions(args, kwargs)
        _forward_options(kwargs)
        routed = self.config.is_moe and bool(self.config.output_router_logits
                                             if want_router is None else want_router)
        aux = routed and labels is not None
        if routed:  # the reference adds the balancing loss of this forward's routing
            for layer in self.model.layers:
                if hasattr(layer.mlp, "last_router_logits"):
                    layer.mlp.last_router_logits = None
        hidden = attentions = None
        if embeds is not None:
            from .ernie_embeds import forward_embeds

            logits = forward_embeds(self, embeds, kwargs.get("attention_mask"))
        elif (positions is not None and kwargs.get("attention_mask") is not None
              and (labels is not None or is_grad_enabled())
              and not (want_attn or want_hidden)):
            # a padded batch at given positions, training: a graph (ernie_masked_graph)
            from .ernie_masked_graph import (
                forward_masked_graph,
                keep_real_router_rows,
                lazy_masked_past,
            )

            ids = args[0] if args else kwargs.get("input_ids")
            logits = forward_masked_graph(self, ids, kwargs["attention_mask"], positions)
            if routed:
                keep_real_router_rows(self, kwargs["attention_mask"])
            if labels is None and not (routed and want_router) and use_cache is not False:
                if not (isinstance(keep, int) and keep == 0):
                    logits = _keep_logits(logits, keep)
                logits.__class__ = OutputLogits
                logits._past = lazy_masked_past(self, ids, kwargs["attention_mask"], positions)
                return logits
        elif (positions is not None and kwargs.get("attention_mask") is not None
              and labels is None and not (want_attn or want_hidden)):
            # a padded batch at given positions: inference, as a cached forward (no graph)
            from .ernie_past import forward_with_past

            logits, cache = forward_with_past(self, args[0] if args else
                                              kwargs.get("input_ids"), None,
                                              kwargs["attention_mask"], positions)
            logits.__class__ = OutputLogits
            logits._past = cache
            return logits
        elif positions is not None:  # transformers' packed rows (ernie_positions)
            if want_attn or want_hidden or kwargs.get("attention_mask") is not None:
                raise ValueError("position_ids go with neither attention_mask nor "
                                 "output_attentions / output_hidden_states here: give packed "
                                 "rows (DataCollatorWithFlattening) alone")
            from .ernie_positions import forward_positions

            logits = forward_positions(self, args[0] if args else kwargs.get("input_ids"),
                                       positions)
        elif want_attn:
            from .ernie_attentions import forward_attentions

            logits, hidden, attentions = forward_attentions(self, *args, **kwargs)
            hidden = hidden if want_hidden else None
        elif want_hidden:
            from .ernie_hidden import forward_hidden

            logits, hidden = forward_hidden(self, *args, **kwargs)
        else:
            logits = super().__call__(*args, **kwargs)
        if not (isinstance(keep, int) and keep == 0):
            logits = _keep_logits(logits, keep)
        if labels is None:
            if routed and want_router:  # asked in the call (a plain model(ids) stays logits)
                aux_loss, router = self._router_outputs(args, kwargs)
                return CausalLMOutput(loss=None, logits=logits, hidden_states=hidden,
                                      attentions=attentions, aux_loss=aux_loss,
                                      router_logits=router)
            if hidden is not None or attentions is not None:
                return CausalLMOutput(loss=None, logits=logits, hidden_states=hidden,
                                      attentions=attentions)
            if type(logits) is Tensor:  # noqa: E721 (a plain Tensor, not a subclass)
                logits.__class__ = OutputLogits
                if use_cache is not False and "cache" not in kwargs and embeds is None:
                    from .ernie_past import lazy_past

                    ids = args[0] if args else kwargs.get("input_ids")
                    logits._past = lazy_past(self, np.array(_host(ids)),
                                             kwargs.get("attention_mask"))
            return logits
        y = np.asarray(_host(labels), dtype=np.int64)
        if y.ndim == 1:
            y = y[None]
        B, T, V = logits.shape
        if y.shape != (B, T):
            raise ValueError(f"labels have shape {y.shape}, the input ids {(B, T)}")
        mask = kwargs.get("attention_mask")
        if mask is not None:  # a label predicted from a row's leading or trailing padding
            mask = np.asarray(_host(mask)).reshape(B, T) != 0  # (a hole's is counted)
            y = y.copy()
            inside = (np.cumsum(mask, 1) > 0) & (np.cumsum(mask[:, ::-1], 1)[:, ::-1] > 0)
            y[:, 1:][~inside[:, :-1]] = -100
        target = _as_index(y[:, 1:].reshape(-1), self)
        flat = logits[:, :-1].reshape(B * (T - 1), V)
        if num_items is None:
            loss = F.cross_entropy(flat, target)
        else:  # transformers' gradient accumulation: the sum over the batch's label count
            loss = F.cross_entropy(flat, target, reduction="sum") / float(_host(num_items))
        aux_loss = router = None
        if aux:
            aux_loss, router = self._router_outputs(args, kwargs)
            loss = loss + aux_loss * self.config.router_aux_loss_coef
        return CausalLMOutput(loss=loss, logits=logits, hidden_states=hidden,
                              attentions=attentions, aux_loss=aux_loss, router_logits=router)

    def _call_with_past(self, past, args, kwargs, labels):
        """``model(ids, past_key_values=cache)``: the logits of ``ids`` continuing the
        cache (``ernie_past``), an output whose ``past_key_values`` is the cache."""
        from .ernie_past import forward_with_past

        bad = [k for k in ("output_hidden_states", "output_attentions", "output_router_logits")
               if kwargs.get(k)]
        if labels is not None or bad:
            raise ValueError(f"past_key_values with {'labels' if labels is not None else bad[0]}"
                             " is not supported: a cached forward is for inference (give the "
                             "whole sequence without past_key_values)")
        ids = args[0] if args else kwargs.get("input_ids")
        if ids is None:
            raise TypeError("past_key_values needs the new input_ids")
        logits, cache = forward_with_past(self, ids, past, kwargs.get("attention_mask"),
                                          kwargs.get("position_ids"))
        logits.__class__ = OutputLogits
        logits._past = cache
        return logits

    def _router_outputs(self, args, kwargs):
        """``(aux_loss, router_logits)`` of the forward just run (run again with a graph
        when its path kept no router logits: the fast inference path)."""
        if any(getattr(layer.mlp, "last_router_logits", 0) is None
               for layer in self.model.layers):
            from ..core.autograd import enable_grad

            with enable_grad():
                super().__call__(*args, **kwargs)
        router = tuple(layer.mlp.last_router_logits for layer in self.model.layers
                       if getattr(layer.mlp, "last_router_logits", None) is not None)
        return self.load_balancing_loss(), router

    def forward(self, input_ids, cache: KVCache | None = None, last_only: bool = False,
                attention_mask=None):
        """Logits (B, T, V) of token ids (B, T); with ``cache`` the ids continue the cached
        positions; ``last_only`` computes the logits of the last position only (B, 1, V).
        ``attention_mask`` (B, T) of 1s and 0s (a tokenizer's padded batch, left or right
        padding): each row's tokens attend to that row's real tokens only, as transformers'
        forward with the mask gives (the rotary embedding is relative, so the real tokens'
        logits are those of the row alone); padded positions' logits are 0."""
        if attention_mask is not None:
            rows = _mask_rows(attention_mask, input_ids)
            if rows is not None:
                if cache is not None or last_only:
                    raise ValueError("attention_mask with padding is for a whole forward "
                                     "(no cache, not last_only)")
                return self._forward_padded(_host(input_ids), rows)
        idx = _as_index(input_ids, self)
        if idx.ndim == 1:
            idx = idx.reshape(1, -1)
        B, T = idx.shape
        past = cache.length if cache is not None else 0
        if past + T > self.config.max_position_embeddings:
            raise ValueError(f"sequence length {past + T} exceeds max_position_embeddings "
                             f"{self.config.max_position_embeddings}")
        fast = forward_fast(self, idx, cache, last_only)  # no graph: fused weights
        if fast is not None:
            return Tensor(fast)
        cos, sin = self.rotary(np.arange(past, past + T))
        x = self.model.embed_tokens(idx)  # (B, T, C)
        for layer in self.model.layers:
            if cache is None:
                x = self._layer(layer, layer.forward, x, cos, sin)
            else:
                x = layer(x, cos, sin, cache)
        if cache is not None:
            cache.length += T
        if last_only:
            x = x[:, -1:]
        return self.lm_head(self.model.norm(x))

    def _forward_padded(self, ids, rows):
        """Logits (B, T, V) of a padded batch: the real tokens as one packed stream (each
        row at positions 0..n-1), the padded positions 0."""
        ids = np.asarray(ids, dtype=np.int64).reshape(len(rows), -1)
        B, T = ids.shape
        tokens = np.concatenate([ids[b, a:e] for b, (a, e) in enumerate(rows)])
        lengths = np.array([e - a for a, e in rows], dtype=np.int64)
        cu = np.concatenate([[0], np.cumsum(lengths)])
        positions = np.concatenate([np.arange(n) for n in lengths])
        packed = self.forward_packed(tokens, cu, positions)  # (N, V)
        where = np.full((B, T), len(tokens), dtype=np.int64)  # row N: the zeros
        for b, (a, e) in enumerate(rows):
            where[b, a:e] = cu[b] + np.arange(e - a)
        zero = Tensor(packed.xp.zeros((1, packed.shape[1]), dtype=packed.dtype))
        return cat([packed, zero], axis=0)[packed.xp.asarray(where.reshape(-1))] \
            .reshape(B, T, packed.shape[1])

    def forward_packed(self, tokens, cu_seqlens, positions, cache=None,
                       last_only: bool = False):
        """Logits (N, V) of a packed token stream (N,) (sequences never attend across);
        ``last_only``: of each sequence's last token only (S, V); ``cache``: a
        :class:`PackedKVCache` that keeps each sequence's keys and values (prefill)."""
        tokens = _as_index(tokens, self)
        cu = np.asarray(_host(cu_seqlens), dtype=np.int64)
        cos, sin = self.rotary(positions)
        fast = forward_packed_fast(self, tokens, cu, cos, sin, cache, last_only)
        if fast is not None:
            return Tensor(fast)
        x = self.model.embed_tokens(tokens)
        for layer in self.model.layers:
            if cache is None:
                x = self._layer(layer, layer.forward_packed, x, cos, sin, cu)
            else:
                x = layer.forward_packed(x, cos, sin, cu, cache)
        if last_only:
            x = x[x.xp.asarray(cu[1:] - 1)]
        return self.lm_head(self.model.norm(x))

    # ---- training: the hidden states and the head fused with the loss ------------------------
    def hidden(self, input_ids):
        """The last hidden states (B, T, C) after the final norm, with a graph: what
        :meth:`forward` feeds the head."""
        idx = _as_index(input_ids, self)
        if idx.ndim == 1:
            idx = idx.reshape(1, -1)
        T = idx.shape[1]
        if T > self.config.max_position_embeddings:
            raise ValueError(f"sequence length {T} exceeds max_position_embeddings "
                             f"{self.config.max_position_embeddings}")
        cos, sin = self.rotary(np.arange(T))
        x = self.model.embed_tokens(idx)
        for layer in self.model.layers:
            x = self._layer(layer, layer.forward, x, cos, sin)
        return self.model.norm(x)

    def hidden_packed(self, tokens, cu_seqlens, positions):
        """The last hidden states (N, C) of a packed token stream, with a graph."""
        tokens = _as_index(tokens, self)
        cu = np.asarray(_host(cu_seqlens), dtype=np.int64)
        cos, sin = self.rotary(positions)
        x = self.model.embed_tokens(tokens)
        for layer in self.model.layers:
            x = self._layer(layer, layer.forward_packed, x, cos, sin, cu)
        return self.model.norm(x)

    def _fused_head(self):
        """The head, when :meth:`loss` can fuse it with the cross-entropy (a plain float32
        Linear on the host; a LoRA-adapted or 16-bit head takes the logits path)."""
        head = self.lm_head
        if type(head) is nn.Linear and head.weight.dtype == np.float32 and isinstance(
                head.weight._data, np.ndarray):
            return head
        return None

    def _layer(self, layer, forward, x, *rest):
        """``forward(x, *rest)`` of one decoder layer, recomputed in backward when
        ``self.recompute`` (an MoE layer's router logits come out of the recomputed block too,
        so that the load-balancing loss keeps its gradient)."""
        if not (self.recompute and is_grad_enabled()):
            return forward(x, *rest)
        params = list(layer.parameters())
        if not hasattr(layer.mlp, "last_router_logits"):
            return checkpoint(forward, x, *rest, params=params)

        def with_router(h, *more):
            return forward(h, *more), layer.mlp.last_router_logits

        x, layer.mlp.last_router_logits = checkpoint(with_router, x, *rest, params=params)
        return x

    def forward_step(self, ids, cache, rows=None):
        """Logits (B, V) of one new token per row (B,), row ``b`` at position
        ``cache.lengths[b]`` (a decode step after :meth:`forward_packed` filled ``cache``);
        ``rows``: the cache rows these tokens continue (default all, in order)."""
        idx = _as_index(np.asarray(_host(ids), dtype=np.int64).reshape(-1), self)
        rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        cos, sin = self.rotary(cache.lengths if rows is None else cache.lengths[rows])
        logits = forward_step_fast(self, idx, cache, rows, cos, sin)  # no graph: fused
        if logits is None:
            x = self.model.embed_tokens(idx)  # (B, C)
            for layer in self.model.layers:
                x = layer.forward_step(x, cos, sin, cache, rows)
            logits = rows_linear(self.lm_head, self.model.norm(x))
        else:
            logits = Tensor(logits)
        if rows is None:
            cache.lengths = cache.lengths + 1
        else:
            cache.lengths = cache.lengths.copy()
            cache.lengths[rows] += 1
        return logits

    def loss(self, batch):
        """Mean next-token cross-entropy of ``(x, y)`` blocks or a :class:`PackedBatch`
        (targets of -100 are ignored); for an MoE config with ``output_router_logits``, plus
        ``router_aux_loss_coef`` times :meth:`load_balancing_loss`, as the reference trains."""
        head = self._fused_head()
        if isinstance(batch, PackedBatch):
            targets = _as_index(batch.targets, self)
            if head is not None:
                h = self.hidden_packed(batch.tokens, batch.cu_seqlens, batch.positions)
                loss = F.linear_cross_entropy(h, head.weight, head.bias, targets)
            else:
                logits = self.forward_packed(batch.tokens, batch.cu_seqlens, batch.positions)
                loss = F.cross_entropy(logits, targets)
        else:
            x, y = batch
            targets = _as_index(y, self)
            if head is not None:
                h = self.hidden(x)
                B, T, C = h.shape
                loss = F.linear_cross_entropy(h.reshape(B * T, C), head.weight, head.bias,
                                              targets.reshape(B * T))
            else:
                logits = self.forward(x)
                B, T, V = logits.shape
                loss = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T))
        if self.config.is_moe and self.config.output_router_logits:
            # the NLL alone, kept for the held-out loop's val_nll (val_loss adds the term, as
            # transformers' eval_loss; the NLL is what compares with a dense model's loss)
            self.last_nll = loss.detach()
            loss = loss + self.load_balancing_loss() * self.config.router_aux_loss_coef
        return loss

    def load_balancing_loss(self):
        """The Switch-Transformer balancing loss of the last forward, as the reference
        computes it: over every MoE layer's tokens, ``E * sum_e f_e * P_e`` with ``f_e`` the
        share of top-k choices (by the plain probabilities) that went to expert ``e`` and
        ``P_e`` its mean router probability; differentiable through ``P``."""
        counts, prob_sum, rows = self.balancing_parts()
        share = Tensor(counts / rows, device=prob_sum.device).astype(prob_sum.dtype)
        return (share * (prob_sum / rows)).sum() * self.config.moe_num_experts

    def balancing_parts(self):
        """``(counts (E,), prob_sum (E,), rows)`` of the last forward over every MoE layer:
        top-k choices per expert (host), the router probabilities summed over the tokens (a
        Tensor, differentiable) and the token count; several ranks add theirs up to compute
        :meth:`load_balancing_loss` of the whole batch (``parallel.ernie_experts``)."""
        E, k = self.config.moe_num_experts, self.config.moe_k
        counts, prob_sum, rows = np.zeros(E), None, 0
        for layer in self.model.layers:
            logits = getattr(layer.mlp, "last_router_logits", None)
            if logits is None:
                continue
            probs = F.softmax(logits, axis=-1)  # (N, E)
            top = _host(probs._data).argsort(axis=-1, kind="stable")[:, ::-1][:, :k]
            counts += np.bincount(top.reshape(-1), minlength=E)
            s = probs.sum(axis=0)
            prob_sum = s if prob_sum is None else prob_sum + s
            rows += probs.shape[0]
        if prob_sum is None:
            raise ValueError("load_balancing_loss needs a forward of an MoE model first")
        return counts, prob_sum, rows

    # ---- generation --------------------------------------------------------------------------
    @torch_like_output  # torch input ids -> torch output, as transformers
    def generate(self, input_ids=None, max_new_tokens: int | None = None, *,
                 do_sample: bool | None = None, temperature: float | None = None,
                 top_k: int | None = None, top_p: float | None = None,
                 repetition_penalty: float | None = None, eos_token_id="config",
                 pad_token_id="config", use_cache: bool = True, seed: int | None = None,
                 generator=None, stop_strings=None, tokenizer=None, streamer=None,
                 attention_mask=None, **options):
        """Continue each row of ``input_ids`` (B, T0) by up to ``max_new_tokens`` tokens
        (default 20).

        Greedy unless ``do_sample`` (then ``temperature``, ``top_k``, ``top_p``, drawn from
        ``generator``, a numpy Generator, or one seeded by ``seed``), as transformers'
        ``generate``; ``repetition_penalty`` > 1 discourages tokens already in the row
        (applied first, as transformers does). A choice not given is the checkpoint's
        ``generation_config.json``'s, else transformers' default (greedy; when sampling
        temperature 1, top-k 50, top-p 1; ``top_k=0``: no top-k), as transformers resolves
        them. A row that emits ``eos_token_id`` (an id or a list; default: the checkpoint's
        generation config, else its config) or whose text reaches one of
        ``stop_strings`` (decoded with ``tokenizer``, default the checkpoint's) is
        finished: later positions get ``pad_token_id``, and generation stops once every row
        is. ``use_cache`` keeps keys and values per layer, so a new token costs one position
        of work. ``streamer`` sees the tokens as they come, as transformers' streamers do:
        ``put(prompt ids)``, then ``put(new ids (B,))`` per step, then ``end()`` (a plain
        callable gets each step's ids). Returns int64 ids (B, T0 + generated): a torch
        tensor when ``input_ids`` is one (as transformers), else host numpy ids.
        ``input_ids`` may be a numpy array, a list or a torch tensor.

        transformers' other options (``ernie_generate_options``): ``max_length``,
        ``min_new_tokens`` / ``min_length``, ``no_repeat_ngram_size``,
        ``num_return_sequences`` (sampling), ``generation_config``,
        ``return_dict_in_generate`` with ``output_scores`` / ``output_logits`` (a
        :class:`GenerateOutput`); ``num_beams > 1`` is transformers' beam search
        (:func:`.ernie_beam.generate_beams`); the other processors are one error.

        A list of prompts of different lengths (1-D id arrays) goes to
        :meth:`generate_batch` (one packed prefill, no padding) and returns a list.
        ``attention_mask`` (B, T0), a tokenizer's padded batch (``model.generate(**tok(
        prompts, padding=True, return_tensors="np"))``): the rows' real tokens go to
        :meth:`generate_batch`, and the result is laid out as transformers lays it out (the
        prompts as given, then each row's new tokens, ``pad_token_id`` after a finished
        row's eos), with the same tokens as transformers' greedy ``generate``."""
        if input_ids is None:  # transformers' name for the prompt ids
            input_ids = options.pop("inputs", None)
        embeds = options.pop("inputs_embeds", None)
        if embeds is not None:  # transformers returns the new tokens alone (ernie_embeds)
            from .ernie_embeds import generate_embeds_input

            if input_ids is not None:
                raise ValueError("pass either input_ids or inputs_embeds to generate")
            input_ids, embeds = generate_embeds_input(
                self, embeds, dict(options, streamer=streamer), attention_mask)
            attention_mask = None
        if input_ids is None:
            raise TypeError("generate needs the prompt ids (input_ids)")
        if embeds is None and options.get("past_key_values") is None \
                and options.get("cache") is None:  # pad ids masked out, as transformers
            from .ernie_generate import inferred_mask

            attention_mask = inferred_mask(self, input_ids, attention_mask, pad_token_id,
                                           eos_token_id, options)
        if "assistant_model" in options or "assistant_tokenizer" in options \
                or options.get("prompt_lookup_num_tokens"):
            # transformers' assisted decoding (ernie_assisted): a draft's (or the prompt's)
            # proposals checked in one forward; the same greedy tokens
            from .ernie_assisted import assisted_call, refuse_batch, take_assistant

            assistant, drafts = take_assistant(self, options, tokenizer)
            refuse_batch(self, input_ids, options)
            drafts = drafts or assistant is None  # prompt lookup
            if drafts and embeds is None:
                fast = assisted_call(self, assistant, input_ids, max_new_tokens, dict(
                    do_sample=do_sample, temperature=temperature, top_k=top_k, top_p=top_p,
                    repetition_penalty=repetition_penalty, eos_token_id=eos_token_id,
                    pad_token_id=pad_token_id, stop_strings=stop_strings,
                    use_cache=use_cache, seed=seed, generator=generator), options,
                    attention_mask, streamer)
                if fast is not None:
                    return fast
        beams = options.get("num_beams")
        if beams is None and options.get("generation_config") is not None:
            beams = getattr(options["generation_config"], "num_beams", None)
        past = options.pop("past_key_values", None)
        if past is None and options.get("cache") is not None:
            past = options.pop("cache")  # transformers 5's newer name
        if past is not None and beams is not None and int(beams) > 1:
            # beams on a cache (transformers': expanded by the user with
            # batch_repeat_interleave, skiff takes it unexpanded too): only the columns
            # after the cache are run (ernie_beam_cache.prefill_past)
            options["past_key_values"], past = past, None
        if past is not None:
            from .ernie_generate_states import STATE_OPTIONS

            why = ("penalty_alpha" if options.get("penalty_alpha") else
                   "use_cache=False" if not use_cache else
                   next((k for k in STATE_OPTIONS if options.get(k)), None))
            if why:
                raise ValueError(f"past_key_values with {why} is not supported: greedy or "
                                 "sampling continue a cache")
        hooks = dict(logits_processor=options.pop("logits_processor", None),
                     stopping_criteria=options.pop("stopping_criteria", None))
        if (beams is None or int(beams) <= 1) and not options.get("penalty_alpha"):
            # max_time: a stopping criterion (beams add it in generate_beams; with
            # contrastive search: refused)
            from .ernie_generate_hooks import with_max_time

            hooks["stopping_criteria"] = with_max_time(hooks["stopping_criteria"], options)
        from .ernie_contrastive import contrastive_call

        contrastive = contrastive_call(self, input_ids, max_new_tokens, dict(
            do_sample=do_sample, top_k=top_k, temperature=temperature, top_p=top_p,
            repetition_penalty=repetition_penalty, eos_token_id=eos_token_id,
            pad_token_id=pad_token_id, seed=seed, generator=generator,
            stop_strings=stop_strings, streamer=streamer, tokenizer=tokenizer,
            attention_mask=attention_mask), options)  # penalty_alpha: taken out of options
        if contrastive is not None:
            return contrastive
        from .ernie_generate_states import STATE_OPTIONS, generate_with_states

        want = {k: bool(options.pop(k)) for k in STATE_OPTIONS if options.get(k) is not None}
        if any(want.values()) and options.get("return_dict_in_generate"):
            if beams is not None and int(beams) > 1:  # round 40: each forward's rows
                from .ernie_beam import generate_beams
                from .ernie_generate_states import beam_states

                return beam_states(self, want, lambda fed: generate_beams(
                    self, input_ids, max_new_tokens, attention_mask=attention_mask,
                    eos_token_id=eos_token_id, pad_token_id=pad_token_id,
                    repetition_penalty=repetition_penalty, do_sample=do_sample,
                    temperature=temperature, top_k=top_k, top_p=top_p, streamer=streamer,
                    stop_strings=stop_strings, use_cache=use_cache, seed=seed,
                    generator=generator, tokenizer=tokenizer, fed=fed, **hooks, **options),
                    input_ids, attention_mask, int(beams))
            return generate_with_states(self, want, lambda: self.generate(
                input_ids, max_new_tokens, do_sample=do_sample, temperature=temperature,
                top_k=top_k, top_p=top_p, repetition_penalty=repetition_penalty,
                eos_token_id=eos_token_id, pad_token_id=pad_token_id, use_cache=use_cache,
                seed=seed, generator=generator, stop_strings=stop_strings, tokenizer=tokenizer,
                streamer=streamer, attention_mask=attention_mask, **hooks, **options),
                input_ids, attention_mask)
        if beams is not None and int(beams) > 1:   # transformers' beam search
            from .ernie_beam import generate_beams

            return generate_beams(self, input_ids, max_new_tokens,
                                  attention_mask=attention_mask, eos_token_id=eos_token_id,
                                  pad_token_id=pad_token_id,
                                  repetition_penalty=repetition_penalty, do_sample=do_sample,
                                  temperature=temperature, top_k=top_k, top_p=top_p,
                                  streamer=streamer, stop_strings=stop_strings,
                                  use_cache=use_cache, seed=seed, generator=generator,
                                  tokenizer=tokenizer, **hooks, **options)
        options = self._checkpoint_options(max_new_tokens, options)
        named, extra = resolve_options(dict(
            max_new_tokens=options.pop("max_new_tokens", max_new_tokens), do_sample=do_sample,
            temperature=temperature, top_k=top_k, top_p=top_p,
            repetition_penalty=repetition_penalty, eos_token_id=eos_token_id,
            pad_token_id=pad_token_id, stop_strings=stop_strings), options)
        (max_new_tokens, do_sample, temperature, top_k, top_p, repetition_penalty,
         eos_token_id, pad_token_id, stop_strings) = (named[k] for k in (
            "max_new_tokens", "do_sample", "temperature", "top_k", "top_p",
            "repetition_penalty", "eos_token_id", "pad_token_id", "stop_strings"))
        do_sample, temperature, top_k, top_p, repetition_penalty = self._sampling(
            do_sample, temperature, top_k, top_p, repetition_penalty)
        copies = int(extra["num_return_sequences"])
        if copies > 1 and not do_sample:
            raise ValueError(f"num_return_sequences={copies} with greedy decoding gives the "
                             "same sequence each time: pass do_sample=True (transformers "
                             "refuses it too; beam search is not supported)")
        batched = isinstance(input_ids, (list, tuple)) and input_ids and all(
            np.ndim(_host(p)) == 1 for p in input_ids) \
            and len({len(_host(p)) for p in input_ids}) > 1
        if not batched:
            input_ids = np.array(_host(input_ids), dtype=np.int64, ndmin=2)
            if attention_mask is not None:
                attention_mask = np.array(_host(attention_mask), ndmin=2)
        input_ids = expand_rows(input_ids, copies)
        attention_mask = expand_rows(attention_mask, copies)
        width = max(len(_host(p)) for p in input_ids) if batched else input_ids.shape[1]
        if embeds is not None:  # max_length counts the embeddings, as transformers
            width = embeds.shape[1]
        max_new_tokens, min_new = new_token_counts(extra, max_new_tokens, width)
        eos_ids = self._generation_value("eos_token_id", eos_token_id)
        procs = ExtraProcessors({k: extra[k] for k in PROCESSOR_OPTIONS},
                                eos=[] if eos_ids is None else np.atleast_1d(eos_ids).tolist(),
                                max_new=max_new_tokens, model=self,
                                beams=max(int(extra["num_beams"] or 1),
                                          int(extra["num_return_sequences"] or 1)))
        more = dict(min_new_tokens=min_new, no_repeat_ngram_size=extra["no_repeat_ngram_size"],
                    processors=procs,
                    return_dict_in_generate=extra["return_dict_in_generate"],
                    output_scores=extra["output_scores"], output_logits=extra["output_logits"])
        keymask = None  # a padded batch run on a padded cache (ernie_masked_past)
        if attention_mask is not None and not batched:
            from .ernie_masked_past import as_mask, needs_cache

            keymask = as_mask(attention_mask, *input_ids.shape)
            if not needs_cache(keymask, past, extra["return_dict_in_generate"] and use_cache):
                keymask = None
        if attention_mask is not None and keymask is None:
            rows = _mask_rows(attention_mask, input_ids)
            if rows is not None:
                ids = input_ids
                pad = self._generation_value("pad_token_id", pad_token_id)
                if pad is None:
                    eos = self._generation_value("eos_token_id", eos_token_id)
                    pad = int(np.atleast_1d(eos)[0]) if eos is not None else 0
                on_token, end = _padded_streamer(streamer, ids, pad)
                try:
                    new = self.generate_batch(
                        [ids[b, a:e] for b, (a, e) in enumerate(rows)], max_new_tokens,
                        do_sample=do_sample, temperature=temperature, top_k=top_k,
                        top_p=top_p, repetition_penalty=repetition_penalty,
                        eos_token_id=eos_token_id, seed=seed, generator=generator,
                        stop_strings=stop_strings, tokenizer=tokenizer, streamer=on_token,
                        pad_token_id=pad,
                        _padded=[(list(ids[b]), e - a) for b, (a, e) in enumerate(rows)],
                        **hooks, **more)
                finally:
                    end()
                seqs = new.sequences if isinstance(new, GenerateOutput) else new
                tails = [r[e - a:] for r, (a, e) in zip(seqs, rows)]
                out = np.full((len(rows), ids.shape[1] + max(len(t) for t in tails)), pad,
                              dtype=np.int64)
                out[:, :ids.shape[1]] = ids
                for b, t in enumerate(tails):
                    out[b, ids.shape[1]:ids.shape[1] + len(t)] = t
                if isinstance(new, GenerateOutput):
                    new["sequences"] = out
                    return new
                return out
        if batched:
            if past is not None:
                raise ValueError("past_key_values with prompts of different lengths is not "
                                 "supported: continue one conversation (or rows of one "
                                 "length)")
            return self.generate_batch(
                input_ids, max_new_tokens, do_sample=do_sample, temperature=temperature,
                top_k=top_k, top_p=top_p, repetition_penalty=repetition_penalty,
                eos_token_id=eos_token_id, seed=seed, generator=generator,
                stop_strings=stop_strings, tokenizer=tokenizer, streamer=streamer, **hooks,
                **more)
        _check_sampling(max_new_tokens, do_sample, temperature, top_k, top_p,
                        repetition_penalty)
        out = input_ids
        if out.shape[1] == 0 and embeds is None:
            raise ValueError("generate needs at least one prompt token per row")
        limit = self.config.max_position_embeddings
        if width + max_new_tokens > limit:
            raise ValueError(f"prompt of {out.shape[1]} tokens + {max_new_tokens} new tokens "
                             f"exceeds the context ({limit} positions)")
        eos = self._generation_value("eos_token_id", eos_token_id)
        eos = set() if eos is None else set(np.atleast_1d(eos).tolist())
        pad = self._generation_value("pad_token_id", pad_token_id)
        stop = StopStrings(tokenizer or getattr(self, "tokenizer", None), stop_strings)
        user = UserHooks(**hooks, pad=pad)
        choose = StepChooser(
            batch=out.shape[0], do_sample=do_sample, temperature=temperature, top_k=top_k,
            top_p=top_p, penalty=repetition_penalty, rng=sampling_rng(seed, generator),
            eos=eos, min_new=min_new, no_repeat=extra["no_repeat_ngram_size"],
            keep_scores=extra["output_scores"], keep_logits=extra["output_logits"],
            hooks=user, processors=procs)
        ends = bool(eos or stop or user.criteria)
        done = np.zeros(out.shape[0], dtype=bool)
        halted = done.copy()  # stopped by the user's criteria, not padded (no eos)
        put, end = _stream_hooks(streamer)
        put(out)
        was_training = self.training
        self.eval()
        try:
            with no_grad():
                cache = target = None
                fresh = out
                if (use_cache or keymask is not None) and embeds is None:
                    cache, target, fresh = _continue(self, past, out, max_new_tokens)
                start = None if cache is None else cache.length
                if keymask is not None:  # transformers' positions of a padded batch
                    from .ernie_masked_past import forward_masked, generate_positions

                    places = generate_positions(keymask)[:, start:]
                    choose.penalty_skip = keymask.argmax(-1)
                for _ in range(int(max_new_tokens)):
                    if embeds is not None:
                        from .ernie_embeds import embeds_next_logits

                        logits = embeds_next_logits(self, embeds, out)
                    elif keymask is not None:
                        logits = _host(forward_masked(self, fresh, cache, keymask, places,
                                                      last_only=True)._data)[:, -1]
                        keymask = np.concatenate([keymask, np.ones_like(keymask[:, :1])], 1)
                        places = places[:, -1:] + 1
                    else:
                        ids = fresh if use_cache else out
                        logits = _host(self.forward(ids, cache, last_only=True)._data)[:, -1]
                    nxt = choose(logits, out)
                    if pad is not None and ends:
                        nxt = np.where(done, pad, nxt)
                    if eos:
                        done |= np.isin(nxt, list(eos))
                    out = np.concatenate([out, nxt[:, None]], axis=1)
                    if stop:
                        done |= np.array([stop(row) for row in out])
                    if user.criteria:  # as transformers: padded after only with an eos
                        hit = user.stopped(out)
                        if eos:
                            done |= hit
                        else:
                            halted |= hit
                    put(nxt)
                    fresh = nxt[:, None]
                    if ends and (done | halted).all():
                        break
        finally:
            self.train(was_training)
            end()
        if target is not None:
            from .ernie_past import write_back

            write_back(cache, target, start)
        result = choose.output(out, extra)
        if isinstance(result, GenerateOutput) and cache is not None:
            result["cache"] = target if target is not None else cache  # transformers 5's key
        return result

    def generate_batch(self, prompts, max_new_tokens: int = 20, *,
                       do_sample: bool = False, temperature: float | None = None,
                       top_k: int | None = None, top_p: float | None = None,
                       repetition_penalty: float | None = None,
                       eos_token_id="config", seed: int | None = None, generator=None,
                       stop_strings=None, tokenizer=None, streamer=None, min_new_tokens=0,
                       no_repeat_ngram_size=None, return_dict_in_generate=False,
                       output_scores=False, output_logits=False,
                       logits_processor=None, stopping_criteria=None, processors=None,
                       pad_token_id="config", _padded=None) -> list[np.ndarray]:
        """Continue prompts of *different* lengths together (a list of 1-D id arrays):
        one packed prefill (no padding) and batched decode steps, each row at its own
        position. Choices as :meth:`generate`; a row stops after its eos token or a stop
        string (greedy unless ``do_sample``, whatever the checkpoint's generation config
        says: evaluation asks for greedy answers; the other choices not given are resolved
        as :meth:`generate` resolves them). ``streamer(rows, ids)``, a callable, sees each
        step's new tokens and the rows (prompt indices) they belong to. Returns a list: each
        prompt followed by its new tokens (the eos included), or with
        ``return_dict_in_generate`` a :class:`GenerateOutput` (a finished row's scores are
        NaN in the steps after it left the batch)."""
        do_sample, temperature, top_k, top_p, repetition_penalty = self._sampling(
            do_sample, temperature, top_k, top_p, repetition_penalty)
        _check_sampling(max_new_tokens, do_sample, temperature, top_k, top_p,
                        repetition_penalty)
        if streamer is not None and not callable(streamer):
            raise TypeError(f"generate_batch's streamer is a callable (rows, ids), got "
                            f"{type(streamer).__name__}")
        given = self._generation_value("eos_token_id", eos_token_id)
        given = np.atleast_1d(np.asarray([] if given is None else given, dtype=np.int64))
        eos = set(given.tolist())
        stop = StopStrings(tokenizer or getattr(self, "tokenizer", None), stop_strings)
        pad = self._generation_value("pad_token_id", pad_token_id)
        if pad is None:  # transformers pads with the first eos then
            pad = int(given[0]) if given.size else 0
        user = UserHooks(logits_processor, stopping_criteria, pad=pad)
        user.layout([len(_host(p).reshape(-1)) for p in prompts], _padded)
        stop_all = stop_rows = None
        if user.criteria and eos:  # a row the user's criteria stop is done (padded after)
            stop_rows = user.row_stopper()  # the whole batch once a step, as transformers
        elif user.criteria:  # no eos: as transformers, a stopped row goes on generating
            stop_all = user.batch_stopper()  # until every row has stopped
        extra = dict(return_dict_in_generate=return_dict_in_generate,
                     output_scores=output_scores, output_logits=output_logits)
        choose = StepChooser(
            batch=len(prompts), do_sample=do_sample, temperature=temperature, top_k=top_k,
            top_p=top_p, penalty=repetition_penalty, rng=sampling_rng(seed, generator),
            eos=eos, min_new=int(min_new_tokens or 0), no_repeat=no_repeat_ngram_size,
            keep_scores=output_scores, keep_logits=output_logits, padded=_padded,
            hooks=user, processors=processors)
        was_training = self.training
        self.eval()
        try:
            with no_grad():
                return choose.output(generate_packed(
                    self, [_host(p) for p in prompts], int(max_new_tokens), eos=eos,
                    max_positions=self.config.max_position_embeddings,
                    stop=stop if stop else None, on_token=streamer, pick=choose,
                    stop_all=stop_all, stop_rows=stop_rows), extra)
        finally:
            self.train(was_training)

    def _checkpoint_options(self, max_new_tokens, options: dict) -> dict:
        """``options`` completed from the checkpoint's ``generation_config.json`` as
        transformers completes them: its ``max_new_tokens`` (when the call gives none: it
        wins over the call's ``max_length``, round 43), ``max_length``, ``min_new_tokens``,
        ``min_length``, ``no_repeat_ngram_size``.
        A ``generation_config`` passed to the call wins over the file for each value it
        sets, as transformers fills from the model's config only what the passed one leaves
        at its default (round 42: the file's ``max_new_tokens`` beat the passed config's)."""
        from .ernie_generate_options import _config_values

        gc = self.generation_config or {}
        options = dict(options)
        passed = {k: v for k, v in _config_values(options.get("generation_config")).items()
                  if v is not None}
        if max_new_tokens is None and options.get("max_new_tokens") is None and \
                "max_new_tokens" not in passed:  # the file's max_new_tokens wins over a
            if gc.get("max_new_tokens") is not None:  # max_length, keyword or passed
                options["max_new_tokens"] = gc["max_new_tokens"]  # config, as there
            elif gc.get("max_length") is not None and "max_length" not in passed \
                    and options.get("max_length") is None:
                options["max_length"] = gc["max_length"]
        for key in ("min_new_tokens", "min_length", "no_repeat_ngram_size"):
            if options.get(key) is None and key not in passed and gc.get(key) is not None:
                options[key] = gc[key]
        return options

    def _sampling(self, do_sample, temperature, top_k, top_p, penalty):
        """The sampling choices as transformers resolves them: given > the checkpoint's
        generation config > transformers' defaults (top_k 0: none)."""
        gc = self.generation_config

        def pick(given, name, default):
            if given is not None:
                return given
            value = gc.get(name)
            return default if value is None else value

        return (bool(pick(do_sample, "do_sample", False)), pick(temperature, "temperature", 1.0),
                pick(top_k, "top_k", 50), pick(top_p, "top_p", 1.0),
                pick(penalty, "repetition_penalty", 1.0))

    def _generation_value(self, name, given):
        if given != "config":
            return given
        if name in self.generation_config:
            return self.generation_config[name]
        return getattr(self.config, name)

    @property
    def generation_config(self):
        """The checkpoint's generation options (``generation_config.json``): a dict that
        reads and writes as transformers' ``GenerationConfig`` (``ernie_generation_config``);
        a dict or a ``GenerationConfig`` assigned is taken as that."""
        held = self.__dict__.get("_generation_config")
        if held is None:
            held = self.__dict__["_generation_config"] = as_generation_config(None)
        return held

    @generation_config.setter
    def generation_config(self, value):
        self.__dict__["_generation_config"] = as_generation_config(value)

    @property
    def dtype(self):
        """The weights' dtype (numpy's: float32, or bfloat16/float16 when kept 16-bit)."""
        return next(iter(self.parameters())).dtype

    # activation checkpointing as transformers names it: a request that a Trainer left at its
    # default (recompute not asked) does not turn off
    @property
    def recompute(self) -> bool:
        return bool(self.__dict__.get("_recompute") or self.__dict__.get("_checkpointing"))

    @recompute.setter
    def recompute(self, value) -> None:
        self.__dict__["_recompute"] = bool(value)

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None) -> None:
        """transformers' call: each decoder layer keeps only its input and is recomputed in
        backward (the same gradients, less memory), until
        :meth:`gradient_checkpointing_disable`; ``skiff.Trainer`` keeps it on.
        ``gradient_checkpointing_kwargs`` (torch's ``use_reentrant``...) change nothing
        here."""
        self.__dict__["_checkpointing"] = True

    def gradient_checkpointing_disable(self) -> None:
        self.__dict__["_checkpointing"] = self.__dict__["_recompute"] = False

    @property
    def is_gradient_checkpointing(self) -> bool:
        return self.recompute

    def get_input_embeddings(self):
        return self.model.embed_tokens

    def get_output_embeddings(self):
        return self.lm_head

    def resize_token_embeddings(self, new_num_tokens=None, pad_to_multiple_of=None,
                                mean_resizing: bool = True, seed=None):
        """transformers' ``resize_token_embeddings`` (``ernie_vocab``): after
        ``tok.add_special_tokens(...)``, ``model.resize_token_embeddings(len(tok))``."""
        from .ernie_vocab import resize_token_embeddings

        return resize_token_embeddings(self, new_num_tokens, pad_to_multiple_of,
                                       mean_resizing, seed)

    @property
    def device(self):
        """Where the weights are (``"cpu"`` or a GPU), so that transformers' idiom
        ``tok(text, return_tensors="pt").to(model.device)`` runs (torch tensors on the CPU,
        which ``generate`` and ``forward`` take as they take numpy arrays)."""
        return next(iter(self.parameters())).device

    def extra_repr(self) -> str:
        c = self.config
        moe = (f", experts={c.moe_num_experts} (top {c.moe_k}, shared "
               f"{c.moe_num_shared_experts})" if c.is_moe else "")
        return (f"layers={c.num_hidden_layers}, hidden={c.hidden_size}, heads="
                f"{c.num_attention_heads}/{c.num_key_value_heads}, vocab={c.vocab_size}{moe}")


def _hole_positions(args, kwargs):
    """transformers' forward positions (the columns, ``arange(T)``) for an
    ``attention_mask`` with padding between a row's tokens (a hole), else None: such a
    batch then runs as a mask given with positions (``ernie_masked_graph`` /
    ``ernie_masked_past``), the logits transformers' forward gives."""
    mask = kwargs.get("attention_mask")
    ids = args[0] if args else kwargs.get("input_ids")
    if mask is None or ids is None or not has_hole(mask, ids):
        return None
    return np.arange(np.asarray(_host(mask)).shape[-1], dtype=np.int64)[None]


def _forward_options(kwargs: dict) -> None:
    """Take out of a forward call's keywords what transformers users pass and skiff's
    forward needs not (``use_cache``, ``return_dict``)."""
    kwargs.pop("use_cache", None)
    if kwargs.pop("return_dict", None) is False:
        raise ValueError("return_dict=False: skiff's model returns the logits tensor (which "
                         "has .logits) or, with labels, an output with .loss and .logits")


def _keep_logits(logits, keep):
    """transformers' ``logits_to_keep``: an int k > 0 keeps the last k positions' logits, a
    1-D tensor of positions keeps those."""
    if isinstance(keep, (int, np.integer)):
        if keep < 0:
            raise ValueError(f"logits_to_keep must be >= 0, got {keep}")
        return logits[:, -int(keep):]
    idx = np.asarray(_host(keep), dtype=np.int64)
    if idx.ndim != 1:
        raise ValueError(f"logits_to_keep must be an int or a 1-D tensor of positions, got "
                         f"shape {idx.shape}")
    return logits[:, idx]


def _continue(model, past, out, max_new_tokens):
    """``(cache, transformers cache or None, ids to run first)`` for a generation from
    ``out`` (B, T) that continues ``past`` (None: a fresh cache)."""
    from .ernie_past import as_past

    cache, target = as_past(model, past)
    held = cache.length
    if held >= out.shape[1]:
        raise ValueError(f"past_key_values hold {held} positions and input_ids {out.shape[1]}:"
                         " input_ids must be the whole sequence, longer than the cache (the "
                         "cache holds its first positions)")
    if cache.batch_size is not None and cache.batch_size != out.shape[0]:
        raise ValueError(f"past_key_values hold {cache.batch_size} rows, input_ids "
                         f"{out.shape[0]}")
    cache.reserve(out.shape[1] + max_new_tokens)
    return cache, target, out[:, held:]


def _padded_streamer(streamer, ids, pad):
    """``(on_token(rows, new), end)`` for a padded batch's packed decoding: the streamer
    sees what transformers' streamer sees, the padded prompt (B, T), then each step's (B,)
    tokens with ``pad`` for the rows that have finished, then ``end()``."""
    if streamer is None:
        return None, (lambda: None)
    put, end = _stream_hooks(streamer)
    put(np.asarray(ids))
    batch = np.asarray(ids).shape[0]

    def on_token(rows, new):
        full = np.full(batch, pad, dtype=np.int64)
        full[np.asarray(rows)] = new
        put(full)

    return on_token, end


def _stream_hooks(streamer):
    """(put, end) for a transformers-style streamer, a callable, or None."""
    if streamer is None:
        return (lambda ids: None), (lambda: None)
    if hasattr(streamer, "put"):
        return streamer.put, getattr(streamer, "end", lambda: None)
    if callable(streamer):
        first = [True]

        def put(ids):
            if first[0]:  # the prompt: a callable sees new tokens only
                first[0] = False
                return
            streamer(ids)

        return put, (lambda: None)
    raise TypeError(f"streamer must have put()/end() or be callable, got "
                    f"{type(streamer).__name__}")




def num_parameters(cfg: ErnieConfig) -> int:
    """Parameter count of a model with this config (computed, no model built)."""
    C, V, H, K, D = (cfg.hidden_size, cfg.vocab_size, cfg.num_attention_heads,
                     cfg.num_key_value_heads, cfg.head_dim)
    attn = C * H * D * 2 + C * K * D * 2
    total = V * C * (1 if cfg.tie_word_embeddings else 2) + C
    for layer in range(cfg.num_hidden_layers):
        if cfg.is_moe_layer(layer):
            mlp = (cfg.moe_num_experts * 3 * C * cfg.moe_intermediate_size
                   + 3 * C * cfg.moe_intermediate_size * cfg.moe_num_shared_experts
                   + C * cfg.moe_num_experts)
        else:
            mlp = 3 * C * cfg.intermediate_size
        total += attn + mlp + 2 * C
    return total


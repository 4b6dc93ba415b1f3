"""``model(inputs_embeds=e)``: a forward from embeddings instead of token ids, as
transformers takes them (prompt tuning, soft prompts, embeddings edited before the decoder).

``e`` (B, T, C) is a skiff Tensor (gradients flow back into it: a trained soft prompt), a
torch tensor or a numpy array. The rows start at position 0 and attend causally, as
transformers' forward without a mask. Refused, one error each: ``input_ids`` together with
it, a padded ``attention_mask``, a cache, and the options that need the ids
(``position_ids``, hidden states, attentions).
"""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor
from .ernie_generate import _mask_rows
from .gpt import _host

__all__ = ["forward_embeds", "check_embeds_call"]


def check_embeds_call(args, kwargs) -> None:
    """One clear error for what ``inputs_embeds`` does not go with here."""
    if args or kwargs.get("input_ids") is not None:
        raise ValueError("pass either input_ids or inputs_embeds, not both (transformers "
                         "refuses both too)")
    bad = [k for k in ("position_ids", "output_hidden_states", "output_attentions", "cache")
           if kwargs.get(k) is not None and kwargs.get(k) is not False]
    if bad:
        raise ValueError(f"inputs_embeds with {bad[0]} is not supported here: give the "
                         "embeddings alone (or input_ids with it)")


def _as_tensor(embeds, model) -> Tensor:
    if isinstance(embeds, Tensor):
        return embeds
    if hasattr(embeds, "detach") and hasattr(embeds, "numpy"):  # torch
        embeds = embeds.detach().cpu().numpy()
    w = model.model.embed_tokens.weight
    return Tensor(w.xp.asarray(np.asarray(_host(embeds)), dtype=w.dtype))


def forward_embeds(model, embeds, attention_mask=None) -> Tensor:
    """Logits (B, T, V) of the embeddings ``embeds`` (B, T, C) run through the decoder."""
    x = _as_tensor(embeds, model)
    if x.ndim == 2:
        x = x.reshape(1, *x.shape)
    if x.ndim != 3 or x.shape[-1] != model.config.hidden_size:
        raise ValueError(f"inputs_embeds must be (batch, length, {model.config.hidden_size}), "
                         f"got shape {tuple(x.shape)}")
    B, T, _ = x.shape
    if attention_mask is not None:
        ids = np.zeros((B, T), dtype=np.int64)
        if _mask_rows(attention_mask, ids) is not None:
            raise ValueError("inputs_embeds with a padded attention_mask is not supported: "
                             "give rows of one length (no padding), or input_ids")
    if T > model.config.max_position_embeddings:
        raise ValueError(f"sequence length {T} exceeds max_position_embeddings "
                         f"{model.config.max_position_embeddings}")
    cos, sin = model.rotary(np.arange(T))
    for layer in model.model.layers:
        x = model._layer(layer, layer.forward, x, cos, sin)
    return model.lm_head(model.model.norm(x))


def generate_embeds_input(model, embeds, options: dict, attention_mask):
    """``generate(inputs_embeds=e)``: the checks, and ``(prompt ids (B, 0), embeddings)``
    for the greedy/sampling loop (transformers returns the new tokens only)."""
    bad = [k for k in ("num_beams", "penalty_alpha", "output_hidden_states",
                       "output_attentions", "past_key_values", "cache", "streamer")
           if options.get(k) not in (None, False, 1)]
    if int(options.get("num_return_sequences") or 1) > 1:
        bad.append("num_return_sequences")
    if bad:
        raise ValueError(f"generate(inputs_embeds=...) with {bad[0]} is not supported here: "
                         "greedy or sampling from the embeddings")
    x = _as_tensor(embeds, model)
    if x.ndim == 2:
        x = x.reshape(1, *x.shape)
    if attention_mask is not None and _mask_rows(
            attention_mask, np.zeros(x.shape[:2], dtype=np.int64)) is not None:
        raise ValueError("generate(inputs_embeds=...) with a padded attention_mask is not "
                         "supported: rows of one length (no padding)")
    return np.zeros((x.shape[0], 0), dtype=np.int64), x


def embeds_next_logits(model, embeds: Tensor, new_ids) -> np.ndarray:
    """(B, V) logits of the last position of ``embeds`` followed by the tokens ``new_ids``
    (B, n) generated so far (a whole forward each step: no cache)."""
    from ..core.tensor import cat
    from .gpt import _as_index

    x = embeds
    if new_ids.shape[1]:
        x = cat([x, model.model.embed_tokens(_as_index(new_ids, model))], axis=1)
    return _host(forward_embeds(model, x)[:, -1]._data)

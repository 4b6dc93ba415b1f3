"""Contrastive search: ``model.generate(ids, penalty_alpha=0.6, top_k=4)``.

transformers 4.x ran it in ``generate`` (transformers 5 moved it to a Hub repository,
``transformers-community/contrastive-search``, fetched with ``trust_remote_code``). Each
step takes the ``top_k`` most probable next tokens, runs each one position further, and
keeps the one with the best ``(1 - alpha) * p(token) - alpha * max_j cos(h_token, h_j)``:
``h`` the last hidden states (after the final norm), ``j`` over every earlier position of
the row (the prompt included). The chosen candidate's logits are the next step's.

Here each row runs on its own (rows do not interact in this search): the prompt fills a
:class:`~.ernie.KVCache`, each step copies it into ``top_k`` rows, runs the candidates as
one batch of one position each, and keeps the chosen row's cache. A padded batch (left
padding; a tokenizer's ``attention_mask``) runs each row's real tokens and is laid out as
transformers lays it out: the prompts as given, the new tokens, ``pad_token_id`` after a
finished row's eos.
"""

from __future__ import annotations

import numpy as np

__all__ = ["generate_contrastive", "contrastive_call"]


def contrastive_call(model, input_ids, max_new_tokens, named: dict, options: dict):
    """``generate``'s ids when its options ask for contrastive search (``penalty_alpha`` >
    0, greedy, ``top_k`` > 1, as transformers decides; the ``generation_config``'s values
    when the call does not give them, then the checkpoint's ``generation_config.json``),
    else None. ``penalty_alpha`` is taken out of
    ``options`` either way (transformers ignores it when sampling or with ``top_k`` <= 1).
    An option this search does not apply here (sampling processors, streamers, scores,
    ...) is one error naming it."""
    from .ernie_generate_options import (
        EXTRA,
        _config_values,
        new_token_counts,
        resolve_options,
    )

    config = _config_values(options.get("generation_config"))
    alpha = options.pop("penalty_alpha", None)
    if alpha is None:
        alpha = config.pop("penalty_alpha", None)
    if alpha is None:  # the checkpoint's generation_config.json
        alpha = (model.generation_config or {}).get("penalty_alpha")
    beams = options.get("num_beams", config.get("num_beams"))
    if alpha is None or float(alpha) <= 0 or (beams is not None and int(beams) > 1):
        return None
    def given(key):
        return named[key] if named.get(key) is not None else config.get(key)

    do_sample, _, top_k, _, _ = model._sampling(given("do_sample"), None, given("top_k"),
                                                None, None)
    if do_sample or top_k is None or int(top_k) <= 1:
        return None
    set_named = sorted(k for k in ("temperature", "top_p", "repetition_penalty", "seed",
                                   "generator", "stop_strings", "streamer", "tokenizer")
                       if named.get(k) is not None)
    options = model._checkpoint_options(max_new_tokens, options)
    rest, extra = resolve_options(dict(max_new_tokens=options.pop(
        "max_new_tokens", max_new_tokens), eos_token_id=named["eos_token_id"],
        pad_token_id=named["pad_token_id"]), options)
    busy = set_named + sorted(
        f"{k}={v!r}" for k, v in extra.items()
        if k not in ("max_length", "max_new_tokens") and v is not None
        and not _same(v, EXTRA[k]) and k not in ("length_penalty", "early_stopping"))
    if busy:
        raise ValueError(f"contrastive search (penalty_alpha) here takes max_new_tokens / "
                         f"max_length, eos_token_id, pad_token_id and attention_mask; not "
                         f"{', '.join(busy)}")
    T = _prompt_ids(input_ids).shape[1]
    max_new, _ = new_token_counts(extra, rest["max_new_tokens"], T)
    eos = model._generation_value("eos_token_id", rest["eos_token_id"])
    pad = model._generation_value("pad_token_id", rest["pad_token_id"])
    return generate_contrastive(model, input_ids, alpha=float(alpha), top_k=int(top_k),
                                max_new_tokens=max_new, eos_ids=eos, pad_token_id=pad,
                                attention_mask=named.get("attention_mask"))


def _prompt_ids(input_ids) -> np.ndarray:
    from .gpt import _host

    if isinstance(input_ids, (list, tuple)) and input_ids and np.ndim(_host(input_ids[0])) == 1 \
            and len({len(_host(p)) for p in input_ids}) > 1:
        raise ValueError("contrastive search takes a (B, T) array of prompts: pad them "
                         "(tok(prompts, padding=True, padding_side='left')) and pass the "
                         "attention_mask")
    return np.array(_host(input_ids), dtype=np.int64, ndmin=2)


def _same(value, default) -> bool:
    try:
        return bool(value == default)
    except Exception:  # arrays, callables
        return False


def _hidden(model, idx, cache):
    """The last hidden states (B, T, C) after the final norm of ``idx`` (B, T) continuing
    ``cache`` (which they extend)."""
    from .gpt import _as_index

    past = cache.length
    T = idx.shape[1]
    if past + T > model.config.max_position_embeddings:
        raise ValueError(f"sequence length {past + T} exceeds max_position_embeddings "
                         f"{model.config.max_position_embeddings}")
    cos, sin = model.rotary(np.arange(past, past + T))
    x = model.model.embed_tokens(_as_index(idx, model))
    for layer in model.model.layers:
        x = layer(x, cos, sin, cache)
    cache.length += T
    return model.model.norm(x)


def _repeat(cache, n: int):
    """A cache of ``n`` rows, each a copy of ``cache``'s single row."""
    from .ernie_cache import KVCache

    out = KVCache(len(cache.k), cache.capacity)
    out.k = [a.repeat(n, axis=0) for a in cache.k]
    out.v = [a.repeat(n, axis=0) for a in cache.v]
    out.length = cache.length
    return out


def _row(cache, i: int):
    """Row ``i`` of ``cache`` as a one-row cache."""
    from .ernie_cache import KVCache

    out = KVCache(len(cache.k), cache.capacity)
    out.k = [a[i:i + 1] for a in cache.k]
    out.v = [a[i:i + 1] for a in cache.v]
    out.length = cache.length
    return out


def _unit(h: np.ndarray) -> np.ndarray:
    return h / np.linalg.norm(h, axis=-1, keepdims=True)


def contrastive_row(model, prompt: np.ndarray, alpha: float, k: int, max_new: int,
                    eos: set) -> list[int]:
    """The new tokens of one row (its real prompt tokens)."""
    from ..core.autograd import no_grad
    from .ernie_cache import KVCache

    with no_grad():
        cache = KVCache(len(model.model.layers), len(prompt) + max_new + 1)
        h = _hidden(model, np.asarray(prompt, dtype=np.int64)[None], cache)
        context = np.asarray(h.numpy()[0], dtype=np.float32)            # (T, C)
        logits = np.asarray(model.lm_head(h[:, -1]).numpy()[0], dtype=np.float32)
        out: list[int] = []
        for _ in range(max_new):
            z = logits - logits.max()
            probs = np.exp(z) / np.exp(z).sum()
            top = np.argsort(-probs, kind="stable")[:k]
            cand = _repeat(cache, len(top))
            hc = _hidden(model, top[:, None], cand)                       # (K, 1, C)
            nxt = np.asarray(hc.numpy()[:, 0], dtype=np.float32)          # (K, C)
            penalty = (_unit(context) @ _unit(nxt).T).max(axis=0)         # (K,)
            score = (1.0 - alpha) * probs[top] - alpha * penalty
            sel = int(np.argmax(score))
            token = int(top[sel])
            out.append(token)
            if token in eos:
                break
            cache = _row(cand, sel)
            context = np.concatenate([context, nxt[sel:sel + 1]])
            logits = np.asarray(model.lm_head(hc[sel:sel + 1, 0]).numpy()[0], dtype=np.float32)
    return out


def generate_contrastive(model, input_ids, *, alpha: float, top_k: int, max_new_tokens: int,
                         eos_ids, pad_token_id, attention_mask=None) -> np.ndarray:
    """``generate``'s ids (B, T0 + new) by contrastive search (see the module docstring)."""
    from .ernie_generate import _mask_rows

    if not 0 < alpha <= 1:
        raise ValueError(f"penalty_alpha must be in (0, 1], got {alpha}")
    ids = _prompt_ids(input_ids)
    B, T = ids.shape
    rows = [(0, T)] * B
    if attention_mask is not None:
        found = _mask_rows(attention_mask, ids)
        if found is not None:
            if any(e != T for _, e in found):
                raise ValueError("contrastive search with right padding: pad on the left "
                                 "(padding_side='left'), as transformers asks for generation")
            rows = found
    eos = set() if eos_ids is None else {int(e) for e in np.atleast_1d(eos_ids)}
    new = [contrastive_row(model, ids[b, a:e], float(alpha), int(top_k), int(max_new_tokens),
                           eos) for b, (a, e) in enumerate(rows)]
    width = max((len(n) for n in new), default=0)
    if eos and pad_token_id is None:
        pad_token_id = next(iter(eos))
    out = np.full((B, T + width), -1 if pad_token_id is None else int(pad_token_id),
                  dtype=np.int64)
    out[:, :T] = ids
    for b, n in enumerate(new):
        out[b, T:T + len(n)] = n
    return out

"""``generate(..., assistant_model=draft)``: transformers' assisted (speculative) decoding
(round 35).

A small draft model proposes ``num_assistant_tokens`` tokens greedily from its own cache;
the model checks them in one forward over those positions (its cache kept), keeps the
longest prefix it would have chosen itself, then its own next token; both caches are cut
back to what was kept. Greedy tokens are the model's own greedy tokens (what transformers'
assisted greedy decoding returns); only the number of the model's forwards changes.

Run so for one row, greedy, with an eos and ``max_new_tokens`` / ``max_length`` only, and an
ERNIE-4.5 draft of the same vocabulary. Any other call (sampling, a batch, processors,
scores, a streamer, a cache given, a transformers draft, different tokenizers) decodes as
without the assistant: a speed-up not taken, the same greedy tokens (sampled ones drawn
from the same distribution, not transformers' speculative draws). What transformers refuses
is refused with its words: ``assistant_tokenizer`` for the same vocabulary, a different
vocabulary without both tokenizers, ``num_return_sequences`` > 1.

``prompt_lookup_num_tokens`` (transformers' prompt-lookup decoding) takes the same path with
the row itself as the draft (:func:`_lookup`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["take_assistant", "assisted_greedy"]

_DOC = "(see https://huggingface.co/docs/transformers/en/generation_strategies#universal-" \
       "assisted-decoding)"


def take_assistant(model, options: dict, tokenizer=None):
    """Pop ``assistant_model`` / ``assistant_tokenizer`` out of ``options`` and check them as
    transformers does; returns the assistant (None: none), and whether it may draft (the
    same vocabulary). ``tokenizer``: the one given to ``generate``."""
    assistant = options.pop("assistant_model", None)
    helper_tok = options.pop("assistant_tokenizer", None)
    if assistant is None:
        if helper_tok is not None:
            raise ValueError("assistant_tokenizer needs an assistant_model")
        return None, False
    cfg = getattr(assistant, "config", None)
    vocab = getattr(getattr(cfg, "get_text_config", lambda: cfg)(), "vocab_size", None)
    if vocab is None:
        raise TypeError(f"assistant_model must be a model with a config (an ERNIE-4.5 draft "
                        f"from skiff.models.from_pretrained), got {type(assistant).__name__}")
    n = options.get("num_return_sequences")
    if n is not None and int(n) > 1:  # transformers' own refusal
        raise ValueError("num_return_sequences has to be 1 when doing assisted generate, "
                         f"but is {n}.")
    if int(vocab) == int(model.config.vocab_size):
        if helper_tok is not None:  # transformers' own refusal, word for word
            raise ValueError("`assistant_tokenizer` is not required when the main and "
                             "assistant models use the same tokenizer. Please omit "
                             f"`assistant_tokenizer` from `generate()` {_DOC}.")
        return assistant, hasattr(assistant, "forward") and hasattr(assistant, "rotary")
    if tokenizer is None or helper_tok is None:
        raise ValueError("The main and assistant models have different tokenizers. Please "
                         "provide `tokenizer` and `assistant_tokenizer` to `generate()` "
                         f"{_DOC}.")
    return assistant, False  # universal assisted decoding: decoded without the draft


def assisted_greedy(model, assistant, ids: np.ndarray, max_new: int, eos: set,
                    draft_tokens: int = 20, confidence: float | None = 0.4,
                    schedule: str = "constant", ngram: int = 2) -> np.ndarray:
    """Greedy decoding of one row ``ids`` (1, T) with ``assistant`` drafting; returns the
    ids (1, T + new) (after an eos: stops, as transformers does for one row). As
    transformers' drafting: at most ``draft_tokens`` a round, ending after a token the
    draft gives less than ``confidence`` probability; ``schedule="heuristic"``: two more
    after a round wholly kept, one fewer otherwise. ``assistant=None``: prompt lookup
    (transformers' ``prompt_lookup_num_tokens``): the proposal is what followed the first
    earlier occurrence of the row's last ``ngram`` (down to 1) tokens."""
    from ..core.tensor import no_grad
    from .ernie_cache import KVCache

    T = ids.shape[1]
    k = max(1, int(draft_tokens))
    limit = model.config.max_position_embeddings
    if T + max_new > limit:
        raise ValueError(f"prompt of {T} tokens + {max_new} new tokens exceeds the context "
                         f"({limit} positions)")
    room = T + max_new + k + 1
    main = KVCache(len(model.model.layers), room)
    draft = KVCache(len(assistant.model.layers), room) if assistant is not None else None
    out = [int(t) for t in ids[0]]
    was = model.training, assistant.training if assistant is not None else False
    model.eval()
    if assistant is not None:
        assistant.eval()
    try:
        with no_grad():
            logits = _host(model.forward(ids, main, last_only=True))
            out.append(int(np.argmax(logits[0, -1])))
            while len(out) - T < max_new and out[-1] not in eos:
                want = min(k, max_new - (len(out) - T))  # the model adds one more itself
                base = len(out)
                # the draft: its cache holds a prefix of out; feed it the rest, then its own
                proposal = []
                fresh = None if draft is None else np.array([out[draft.length:]], dtype=np.int64)
                for _ in range(want if draft is not None else 0):
                    z = _host(assistant.forward(fresh, draft, last_only=True))[0, -1]
                    proposal.append(int(np.argmax(z)))
                    if proposal[-1] in eos:
                        break
                    if confidence:  # the chosen token's probability (float64 softmax)
                        z = z.astype(np.float64) - float(z.max())
                        if 1.0 / np.exp(z).sum() < confidence:
                            break
                    fresh = np.array([[proposal[-1]]], dtype=np.int64)
                if draft is None:
                    proposal = _lookup(out, want, ngram, eos)
                # the check: the last kept token and the proposal, in one forward
                check = np.array([[out[-1], *proposal]], dtype=np.int64)
                held = main.length
                lg = _host(model.forward(check, main))[0]
                picks = lg.argmax(-1)
                n = 0
                while n < len(proposal) and int(picks[n]) == proposal[n]:
                    n += 1
                kept = proposal[:n] + [int(picks[n])]
                if schedule in ("heuristic", "heuristic_transient"):
                    k = k + 2 if n == len(proposal) else max(1, k - 1)
                main.length = held + 1 + n  # positions whose tokens were kept
                if draft is not None:
                    draft.length = min(draft.length, base + n)
                for t in kept:
                    if len(out) - T >= max_new:
                        break
                    out.append(t)
                    if t in eos:
                        break
    finally:
        model.train(was[0])
        if assistant is not None:
            assistant.train(was[1])
    return np.array([out], dtype=np.int64)


def _lookup(out: list, want: int, ngram: int, eos: set) -> list:
    """transformers' ``PromptLookupCandidateGenerator``: the tokens (at most ``want``) after
    the first earlier match of the last ``ngram`` tokens (then shorter n-grams), cut
    before an eos; [] when nothing matches."""
    seq = np.asarray(out, dtype=np.int64)
    L = len(seq)
    for n in range(min(int(ngram), L - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(seq, n)  # (L - n + 1, n)
        for idx in np.flatnonzero((windows == seq[-n:]).all(axis=1)):
            start = int(idx) + n
            if start < L:
                chosen = [int(t) for t in seq[start:min(start + want, L)]]
                cut = next((i for i, t in enumerate(chosen) if t in eos), None)
                return chosen if cut is None else chosen[:cut]
    return []


def _host(t):
    from .ernie_generate import _host as host

    return np.asarray(host(getattr(t, "_data", t)))


def assisted_call(model, assistant, input_ids, max_new_tokens, named: dict, options: dict,
                  attention_mask, streamer):
    """The ids of ``generate(input_ids, ..., assistant_model=assistant)`` when the call is
    one the draft can speed up (module docstring), else None (decode without it)."""
    from .ernie_generate import _host as host
    from .ernie_generate_options import EXTRA, new_token_counts, resolve_options

    if streamer is not None or named.get("stop_strings") or any(
            options.get(k) for k in ("logits_processor", "stopping_criteria", "max_time",
                                     "past_key_values", "cache", "inputs_embeds",
                                     "penalty_alpha")):
        return None
    ids = np.array(host(input_ids), ndmin=2)
    if ids.ndim != 2 or ids.shape[0] != 1 or ids.shape[1] == 0 \
            or not np.issubdtype(ids.dtype, np.integer):
        return None
    if attention_mask is not None and not np.all(np.asarray(host(attention_mask)) != 0):
        return None
    if not named.get("use_cache", True):
        return None
    opts = model._checkpoint_options(max_new_tokens, options)
    given = {k: named.get(k) for k in ("do_sample", "temperature", "top_k", "top_p",
                                       "repetition_penalty", "eos_token_id", "pad_token_id",
                                       "stop_strings")}
    given["max_new_tokens"] = opts.pop("max_new_tokens", max_new_tokens)
    resolved, extra = resolve_options(given, opts)
    sample, _, _, _, penalty = model._sampling(resolved["do_sample"], None, None, None,
                                               resolved["repetition_penalty"])
    if sample or penalty != 1.0 or resolved["stop_strings"]:
        return None
    if any(extra[k] != v for k, v in EXTRA.items() if k != "max_length"):
        return None
    max_new, _ = new_token_counts(extra, resolved["max_new_tokens"], ids.shape[1])
    if not isinstance(max_new, (int, np.integer)) or max_new < 0:
        return None  # generate's own checks say what is wrong
    eos = model._generation_value("eos_token_id", resolved["eos_token_id"])
    eos = set() if eos is None else set(np.atleast_1d(eos).tolist())
    if max_new == 0:
        return ids.astype(np.int64)
    gc = getattr(assistant, "generation_config", None)

    def choice(name, default):
        value = options.get(name)
        if value is None and gc is not None:
            value = gc.get(name) if isinstance(gc, dict) else getattr(gc, name, None)
        return default if value is None else value

    if assistant is None:  # prompt lookup
        return assisted_greedy(model, None, ids.astype(np.int64), int(max_new), eos,
                               int(options["prompt_lookup_num_tokens"]), None, "constant",
                               int(options.get("max_matching_ngram_size") or 2))
    return assisted_greedy(model, assistant, ids.astype(np.int64), int(max_new), eos,
                           int(choice("num_assistant_tokens", 20)),
                           float(choice("assistant_confidence_threshold", 0.4)),
                           str(choice("num_assistant_tokens_schedule", "constant")))

"""``generate(..., assistant_model=draft)``: transformers' assisted (speculative) decoding
(round 35; sampling round 36).

A small draft model proposes up to ``num_assistant_tokens`` tokens from its own cache; the
model checks them in one forward over those positions (its cache kept): greedy keeps the
longest prefix it would have chosen itself, then its own next token; sampling keeps them
by transformers' speculative sampling (each with probability ``min(1, p / q)``, then one
token from ``max(p - q, 0)``), the draws transformers' own calls, so a torch generator
gives its tokens. Both caches are cut back to what was kept. The order is transformers':
the first round drafts from the prompt.

Run so for one row, greedy or sampled (temperature, top-k, top-p), with an eos and
``max_new_tokens`` / ``max_length`` only, and an ERNIE-4.5 draft of the same vocabulary.
A batch is refused, as transformers refuses it. Any other call (processors, scores, a
streamer, a cache given, a transformers draft, different tokenizers) decodes as without
the assistant: a speed-up not taken, the same greedy tokens, sampled ones from the model's
distribution. What transformers refuses is refused with its words: ``assistant_tokenizer``
for the same vocabulary, a different vocabulary without both tokenizers,
``num_return_sequences`` > 1, a batch.

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
                    schedule: str = "constant", ngram: int = 2, sample=None) -> np.ndarray:
    """Decoding of one row ``ids`` (1, T) with ``assistant`` drafting, in transformers'
    order (``_assisted_decoding``); returns the ids (1, T + new) (after an eos: stops, as
    transformers does for one row). Each round the draft proposes at most
    ``draft_tokens`` (and at most the room left but one), ending after a token it gives
    less than ``confidence`` probability; the model checks the proposal in one forward
    (the first round: with the prompt); ``schedule="heuristic"``: two more after a round
    wholly kept, one fewer otherwise. ``assistant=None``: prompt lookup (transformers'
    ``prompt_lookup_num_tokens``): the proposal is what followed the first earlier
    occurrence of the row's last ``ngram`` (down to 1) tokens.

    Greedy keeps the longest agreeing prefix and the model's next token. ``sample``
    ``(temperature, top_k, top_p, rng)``: the draft samples too, and a proposal is kept
    by transformers' speculative sampling (``_speculative_sampling``: each token with
    probability ``min(1, p / q)``, then one token from ``max(p - q, 0)``); prompt lookup
    draws the model's token at every checked position and keeps the agreeing prefix. The
    draws are transformers' own calls, so a torch generator gives its tokens."""
    from ..core.tensor import no_grad
    from .ernie_cache import KVCache

    T = ids.shape[1]
    k = max(1, int(draft_tokens))
    barred = _lookup_barred(model.config.vocab_size, sample) if assistant is None else None
    limit = model.config.max_position_embeddings
    if T + max_new > limit:
        raise ValueError(f"prompt of {T} tokens + {max_new} new tokens exceeds the context "
                         f"({limit} positions)")
    end = T + max_new  # transformers' max_length
    room = end + k + 1
    main = KVCache(len(model.model.layers), room)
    draft = KVCache(len(assistant.model.layers), room) if assistant is not None else None
    out = [int(t) for t in ids[0]]
    was = model.training, assistant.training if assistant is not None else False
    model.eval()
    if assistant is not None:
        assistant.eval()
    try:
        with no_grad():
            while len(out) < end and not (len(out) > T and out[-1] in eos):
                want = min(k, end - len(out) - 1)
                proposal, qs = [], []
                if draft is not None and want > 0:
                    # its cache holds a prefix of out: feed it the rest, then its own tokens
                    fresh = np.array([out[draft.length:]], dtype=np.int64)
                    for _ in range(want):
                        z = _host(assistant.forward(fresh, draft, last_only=True))[0, -1]
                        if sample is None:
                            proposal.append(int(np.argmax(z)))
                            z = z.astype(np.float64) - float(z.max())
                            sure = 1.0 / np.exp(z).sum()
                        else:
                            q = _probs(z[None], sample, twice=True)
                            proposal.append(int(_draw(sample[3], q)[0]))
                            qs.append(q[0])
                            sure = float(q[0, proposal[-1]])
                        if proposal[-1] in eos or (confidence and sure < confidence):
                            break
                        fresh = np.array([[proposal[-1]]], dtype=np.int64)
                elif draft is None and len(out) + 1 < end:  # transformers' lookup: its
                    proposal = _lookup(out, k, ngram, eos, barred)  # length not cut
                # the check: what the cache lacks and the proposal, in one forward
                check = np.array([out[main.length:] + proposal], dtype=np.int64)
                lg = _host(model.forward(check, main))[0, -len(proposal) - 1:]
                kept, n = _verify(lg, proposal, qs, sample)
                if schedule in ("heuristic", "heuristic_transient"):
                    k = k + 2 if n == len(proposal) else max(1, k - 1)
                main.length = len(out) + n  # positions whose tokens were kept
                if draft is not None:
                    draft.length = min(draft.length, len(out) + n)
                for t in kept:
                    if len(out) >= end:
                        break
                    out.append(t)
                    if t in eos:
                        break
    finally:
        model.train(was[0])
        if assistant is not None:
            assistant.train(was[1])
    return np.array([out], dtype=np.int64)


def _verify(lg: np.ndarray, proposal: list, qs: list, sample):
    """``(tokens kept, proposals accepted)`` from the model's logits ``lg`` (n + 1, V) at
    the proposal's positions and after it."""
    if sample is None:
        picks = lg.argmax(-1)
    elif not qs:  # prompt lookup (or no proposal): a draw at every position, compared
        picks = _draw(sample[3], _probs(lg, sample))
    else:  # transformers' speculative sampling
        p = _probs(lg, sample).astype(np.float32)
        q = np.asarray(qs, dtype=np.float32)
        at = np.arange(len(proposal))
        ratio = p[at, proposal] / q[at, proposal]
        accepted = _rand(sample[3], len(proposal)) <= ratio
        n = int((np.cumsum(~accepted) < 1).sum())
        nxt = p[n]
        if n < len(proposal):
            nxt = np.clip(nxt - q[n], 0, None)
            nxt = nxt / nxt.sum()
        return proposal[:n] + [int(_draw(sample[3], nxt[None])[0])], n
    n = 0
    while n < len(proposal) and int(picks[n]) == proposal[n]:
        n += 1
    return proposal[:n] + [int(picks[n])], n


def _probs(z: np.ndarray, sample, twice: bool = False) -> np.ndarray:
    """(n, V) probabilities of logits ``z`` (n, V) under transformers' warpers
    (temperature, top-k, top-p); ``twice``: run through them twice, as transformers' draft
    runs them (its list holds the call's warpers and its own copies: the draft is sharper,
    the sampled tokens still the model's distribution)."""
    from .ernie_generate import sampling_probs

    temperature, top_k, top_p, _ = sample
    p = sampling_probs(z, temperature, top_k or None, top_p)
    if twice:
        z = np.where(p > 0, np.asarray(z, np.float64) / temperature, -np.inf)
        p = sampling_probs(z, temperature, top_k or None, top_p)
    return p


def _draw(rng, p: np.ndarray) -> np.ndarray:
    """One token per row of ``p`` (n, V): ``torch.multinomial(p, 1)`` (transformers' call)
    from a torch generator, else numpy's choice."""
    from .ernie_generate import is_torch_generator

    if is_torch_generator(rng):
        import torch

        return torch.multinomial(torch.from_numpy(np.asarray(p, np.float32)), 1,
                                 generator=rng)[:, 0].numpy()
    return np.array([rng.choice(len(row), p=row / row.sum()) for row in p], dtype=np.int64)


def _rand(rng, n: int) -> np.ndarray:
    """``n`` uniform draws in [0, 1) (``torch.rand_like``: transformers' call)."""
    from .ernie_generate import is_torch_generator

    if is_torch_generator(rng):
        import torch

        return torch.rand(n, generator=rng).numpy()
    return rng.random(n)


def _lookup(out: list, want: int, ngram: int, eos: set, barred=None) -> list:
    """transformers' ``PromptLookupCandidateGenerator``: the tokens (at most ``want``) after
    the first earlier match of the last ``ngram`` tokens (then shorter n-grams), cut
    before an eos; [] when nothing matches. ``barred`` (V,) bools: cut before the first
    barred token, and a match whose first token is barred is passed over (transformers'
    check against its processors, :func:`_lookup_barred`)."""
    seq = np.asarray(out, dtype=np.int64)
    L = len(seq)
    for n in range(min(int(ngram), L - 1), 0, -1):
        windows = np.lib.stride_tricks.sliding_window_view(seq, n)  # (L - n + 1, n)
        for idx in np.flatnonzero((windows == seq[-n:]).all(axis=1)):
            start = int(idx) + n
            if start < L:
                chosen = [int(t) for t in seq[start:min(start + want, L)]]
                if barred is not None:
                    chosen = chosen[:next((i for i, t in enumerate(chosen) if barred[t]),
                                          len(chosen))]
                    if not chosen:
                        continue
                cut = next((i for i, t in enumerate(chosen) if t in eos), None)
                return chosen if cut is None else chosen[:cut]
    return []


def _lookup_barred(vocab: int, sample):
    """The ids transformers' prompt lookup never proposes while sampling with ``top_p`` < 1
    (None when it bars none): it checks each proposed token against the call's warpers run
    on uniform logits (``torch.ones``), where top-p drops the ids torch's sort puts first
    among the ties. Only computed for a torch generator (the draws that can equal
    transformers'); the order is torch's, so torch computes it. Which tokens are proposed
    changes the speed and the draws, not the distribution the tokens follow."""
    from .ernie_generate import is_torch_generator

    if sample is None or sample[2] is None or sample[2] >= 1 \
            or not is_torch_generator(sample[3]):
        return None
    import torch

    scores = torch.ones((1, int(vocab)), dtype=torch.float32) / float(sample[0] or 1.0)
    ordered, order = torch.sort(scores, descending=False)  # TopPLogitsWarper's steps
    drop = ordered.softmax(dim=-1).cumsum(dim=-1) <= (1 - float(sample[2]))
    drop[..., -1:] = False
    return drop.scatter(1, order, drop)[0].numpy()


def _host(t):
    from .ernie_generate import _host as host

    return np.asarray(host(getattr(t, "_data", t)))


def refuse_batch(model, input_ids, options: dict) -> None:
    """transformers' refusal of a batch in assisted decoding (greedy or sampling: with
    beams or contrastive search transformers ignores the draft), in its words."""
    from .ernie_generate import _host as host

    gc = options.get("generation_config")

    def value(name):
        given = options.get(name)
        if given is None and gc is not None:
            given = gc.get(name) if isinstance(gc, dict) else getattr(gc, name, None)
        return given

    if int(value("num_beams") or 1) > 1 or value("penalty_alpha"):
        return
    if isinstance(input_ids, (list, tuple)) and input_ids and np.ndim(input_ids[0]) == 1:
        rows = len(input_ids)  # a list of prompts
    else:
        rows = np.array(host(input_ids), ndmin=2).shape[0]
    if rows > 1:
        raise ValueError("assisted generate is only supported for batch_size = 1 (transformers "
                         f"refuses it too): got {rows} rows; generate them one at a time, or "
                         "drop assistant_model / prompt_lookup_num_tokens for the batch")


def assisted_call(model, assistant, input_ids, max_new_tokens, named: dict, options: dict,
                  attention_mask, streamer):
    """The ids of ``generate(input_ids, ..., assistant_model=assistant)`` when the call is
    one the draft can speed up (module docstring), else None (decode without it)."""
    from .ernie_generate import _check_sampling, sampling_rng
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
    sample, temperature, top_k, top_p, penalty = model._sampling(
        *(resolved[k] for k in ("do_sample", "temperature", "top_k", "top_p",
                                "repetition_penalty")))
    if penalty != 1.0 or resolved["stop_strings"]:
        return None
    if any(extra[k] != v for k, v in EXTRA.items() if k != "max_length"):
        return None
    max_new, _ = new_token_counts(extra, resolved["max_new_tokens"], ids.shape[1])
    if not isinstance(max_new, (int, np.integer)) or max_new < 0:
        return None  # generate's own checks say what is wrong
    try:
        _check_sampling(max_new, sample, temperature, top_k, top_p, penalty)
    except ValueError:
        return None  # said by generate
    eos = model._generation_value("eos_token_id", resolved["eos_token_id"])
    eos = set() if eos is None else set(np.atleast_1d(eos).tolist())
    if max_new == 0:
        return ids.astype(np.int64)
    draws = (temperature, top_k, top_p, sampling_rng(named.get("seed"),
                                                     named.get("generator"))) \
        if sample else None
    gc = getattr(assistant, "generation_config", None)

    def choice(name, default):
        value = options.get(name)
        if value is None and gc is not None:
            value = gc.get(name) if isinstance(gc, dict) else getattr(gc, name, None)
        return default if value is None else value

    if assistant is None:  # prompt lookup
        return assisted_greedy(model, None, ids.astype(np.int64), int(max_new), eos,
                               int(options["prompt_lookup_num_tokens"]), None, "constant",
                               int(options.get("max_matching_ngram_size") or 2), draws)
    return assisted_greedy(model, assistant, ids.astype(np.int64), int(max_new), eos,
                           int(choice("num_assistant_tokens", 20)),
                           float(choice("assistant_confidence_threshold", 0.4)),
                           str(choice("num_assistant_tokens_schedule", "constant")),
                           sample=draws)

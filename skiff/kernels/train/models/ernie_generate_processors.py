"""More of transformers' ``generate`` processors, as options: ``sequence_bias``,
``bad_words_ids``, ``forced_eos_token_id``, ``suppress_tokens``, ``begin_suppress_tokens``
and the ``min_p``, ``typical_p``, ``epsilon_cutoff`` and ``eta_cutoff`` warpers.

Each acts as transformers' processor of that name, at its place in transformers' order
(``StepChooser`` calls them): sequence bias first, then ``encoder_repetition_penalty`` (a
decoder-only model's "encoder input" is the prompt as given, its padding included: the
logits of the prompt's tokens multiplied by the penalty, divided where negative; before
the repetition penalty), bad words
after the no-repeat n-grams, then (after min-new-tokens) the forced eos at the last step, the
suppressed tokens, the tokens suppressed at the first new position; when sampling, after
top-p: ``min_p`` (below ``min_p`` times the top probability dropped), ``typical_p`` (the
tokens whose surprise is closest to the entropy, up to that mass), ``epsilon_cutoff``
(below that probability dropped), ``eta_cutoff`` (below ``min(eta, sqrt(eta) exp(-H))``
dropped), each keeping the top token (``typical_p`` its most typical one). Sequences are
matched against the rows as transformers holds them (a padded prompt as given).
``exponential_decay_length_penalty=(start, factor)`` raises the eos logits by
``|z| (factor^(n - start) - 1)`` once ``n > start`` tokens are new (after the forced eos,
before the suppressed tokens); ``renormalize_logits`` makes the scores log-probabilities
(transformers' ``LogitNormalization``, last: the tokens chosen are the same, the
``output_scores`` are log-softmaxed). ``guidance_scale`` (with ``negative_prompt_ids`` /
``negative_prompt_attention_mask``) is transformers' ``UnbatchedClassifierFreeGuidance``,
first of all: the scores log-softmaxed, then ``g (scores - u) + u`` with ``u`` the
log-probabilities the model gives after an unconditional prompt (the prompt's last token,
or the negative prompt) followed by the tokens generated so far.
``prefix_allowed_tokens_fn(batch_id, ids) -> [token ids]`` (round 41) is transformers'
``PrefixConstrainedLogitsProcessor``: every token it does not list gets ``-inf`` (in
transformers' order after min-new-tokens; skiff runs it after the bad words, the same
scores: what lies between only sets ``-inf``); ``batch_id`` the row // ``beams``
(transformers' ``max(num_beams, num_return_sequences)``: a prompt's row), ``ids`` the row
as transformers holds it (a torch tensor when torch is installed); an empty list is
transformers' error. A row that has finished is not asked.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ExtraProcessors", "OPTIONS"]

# the options read here, with their "off" values
OPTIONS = {"sequence_bias": None, "bad_words_ids": None, "forced_eos_token_id": None,
           "suppress_tokens": None, "begin_suppress_tokens": None, "min_p": None,
           "typical_p": None, "epsilon_cutoff": None, "eta_cutoff": None,
           "exponential_decay_length_penalty": None, "renormalize_logits": False,
           "top_h": None, "encoder_repetition_penalty": 1.0, "forced_bos_token_id": None,
           "remove_invalid_values": False, "guidance_scale": None,
           "negative_prompt_ids": None, "negative_prompt_attention_mask": None,
           "prefix_allowed_tokens_fn": None}


def _sequences(value, name: str) -> list[tuple[tuple, float]]:
    """``sequence_bias`` as (ids, bias) pairs: a dict {tuple: bias} or a list of
    [ids, bias] (transformers takes both)."""
    items = value.items() if isinstance(value, dict) else value
    out = []
    try:
        for ids, bias in items:
            ids = tuple(int(i) for i in (ids if isinstance(ids, (list, tuple)) else [ids]))
            if not ids:
                raise ValueError
            out.append((ids, float(bias)))
    except (TypeError, ValueError):
        raise ValueError(f"{name} is a dict {{(token ids): bias}} or a list of [[token ids], "
                         f"bias], got {value!r}") from None
    return out


def _id_list(value, name: str) -> list[int]:
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    try:
        return [int(i) for i in value]
    except (TypeError, ValueError):
        raise ValueError(f"{name} is a list of token ids, got {value!r}") from None


class ExtraProcessors:
    """The options of :data:`OPTIONS` for one ``generate`` call (``max_new``: the new
    tokens asked, for the forced eos at the last step; ``eos``: the eos ids, left out of the
    bad words as transformers leaves them; ``model``: the model ``guidance_scale`` runs on
    the unconditional prompt, None where the decoding does not take it)."""

    def __init__(self, options: dict, *, eos=(), max_new: int = 0, model=None,
                 beams: int = 1):
        self.bias = _sequences(options.get("sequence_bias") or {}, "sequence_bias")
        bad = options.get("bad_words_ids")
        if bad is not None:
            if not isinstance(bad, (list, tuple)) or not bad or any(
                    not isinstance(b, (list, tuple)) or not b for b in bad):
                raise ValueError(f"bad_words_ids is a non-empty list of lists of token ids, "
                                 f"got {bad!r}")
            eos = {int(e) for e in eos}
            bad = [tuple(int(i) for i in b) for b in bad]
            bad = [b for b in bad if not (len(b) == 1 and b[0] in eos)]
        self.bad = [(b, -np.inf) for b in bad or []]
        forced = options.get("forced_eos_token_id")
        self.forced_eos = None if forced is None else _id_list(forced, "forced_eos_token_id")
        self.suppress = _id_list(options["suppress_tokens"], "suppress_tokens") \
            if options.get("suppress_tokens") is not None else []
        self.begin_suppress = _id_list(options["begin_suppress_tokens"],
                                       "begin_suppress_tokens") \
            if options.get("begin_suppress_tokens") is not None else []
        min_p = options.get("min_p")
        if min_p is not None and not 0 <= float(min_p) <= 1:
            raise ValueError(f"min_p must be in [0, 1], got {min_p!r}")
        self.min_p = None if min_p is None else float(min_p)
        self.typical, self.epsilon, self.eta = (
            _fraction(options.get(k), k) for k in ("typical_p", "epsilon_cutoff", "eta_cutoff"))
        if self.typical is not None and self.typical >= 1.0:
            self.typical = None  # transformers: off at 1
        self.epsilon = self.epsilon if self.epsilon and self.epsilon < 1 else None
        self.eta = self.eta if self.eta and self.eta < 1 else None
        self.max_new = int(max_new)
        decay = options.get("exponential_decay_length_penalty")
        if decay is not None:
            try:
                start, factor = decay
                start, factor = int(start), float(factor)
            except (TypeError, ValueError):
                raise ValueError("exponential_decay_length_penalty is (start, factor), e.g. "
                                 f"(15, 1.6), got {decay!r}") from None
            if not list(eos):
                raise ValueError("exponential_decay_length_penalty needs an eos_token_id")
            decay = (start, factor, sorted({int(e) for e in eos}))
        self.decay = decay
        self.renormalize = bool(options.get("renormalize_logits"))
        top_h = options.get("top_h")
        if top_h is not None and not 0 < float(top_h) <= 1:
            raise ValueError(f"top_h must be in (0, 1], got {top_h!r}")
        self.top_h = None if top_h is None else float(top_h)
        enc = options.get("encoder_repetition_penalty", 1.0)
        enc = 1.0 if enc is None else enc
        if isinstance(enc, bool) or not isinstance(enc, (int, float, np.floating)) \
                or not enc > 0:
            raise ValueError(f"encoder_repetition_penalty must be a number > 0, got {enc!r}")
        self.encoder_penalty = None if float(enc) == 1.0 else float(enc)
        bos = options.get("forced_bos_token_id")
        if bos is not None and (isinstance(bos, bool)
                                or not isinstance(bos, (int, np.integer)) or bos < 0):
            raise ValueError(f"forced_bos_token_id is a token id, got {bos!r}")
        self.forced_bos = None if bos is None else int(bos)
        self.remove_invalid = bool(options.get("remove_invalid_values"))
        self.guidance = _guidance(options, model)
        self._uncond = None  # the unconditional run's cache, mask, step and newest tokens
        self.cur_len = None  # the rows' width (prompt as held + new), set by early()
        prefix = options.get("prefix_allowed_tokens_fn")
        if prefix is not None and not callable(prefix):
            raise TypeError(f"prefix_allowed_tokens_fn is a callable (batch_id, input_ids) -> "
                            f"list of token ids, got {type(prefix).__name__}")
        self.prefix, self.beams = prefix, max(1, int(beams or 1))

    def __bool__(self) -> bool:
        return bool(self.bias or self.bad or self.forced_eos is not None or self.suppress
                    or self.begin_suppress or self.min_p is not None or self.typical is not None
                    or self.epsilon is not None or self.eta is not None
                    or self.decay is not None or self.renormalize or self.top_h is not None
                    or self.encoder_penalty is not None or self.forced_bos is not None
                    or self.remove_invalid or self.guidance is not None
                    or self.prefix is not None)

    @staticmethod
    def _apply(z: np.ndarray, rows, pairs) -> None:
        """transformers' ``SequenceBiasLogitsProcessor``: a one-token sequence's bias on its
        token everywhere, a longer one's on its last token where the row ends with the
        rest."""
        for ids, bias in pairs:
            if len(ids) == 1:
                z[:, ids[0]] += bias
                continue
            head = list(ids[:-1])
            for r, row in enumerate(rows):
                if len(row) >= len(head) and [int(t) for t in row[len(row) - len(head):]] \
                        == head:
                    z[r, ids[-1]] += bias

    def early(self, z: np.ndarray, rows, step: int = 0, which=None) -> None:
        """Before the repetition penalty: the guidance, the sequence bias, the encoder
        repetition penalty (``rows``: the ids as transformers holds them, the prompt then
        ``step`` new tokens; ``which``: the batch rows they are, None for all)."""
        self.cur_len = max((len(r) for r in rows), default=0)
        if self.guidance is not None:
            self._guide(z, rows, step, which)
        if self.bias:
            self._apply(z, rows, self.bias)
        if self.encoder_penalty is not None:
            # transformers' EncoderRepetitionPenaltyLogitsProcessor, penalty 1 / p
            inv = 1.0 / self.encoder_penalty
            for r, row in enumerate(rows):
                ids = np.unique(np.asarray(row[:len(row) - step], dtype=np.int64))
                s = z[r, ids]
                z[r, ids] = np.where(s < 0, s * inv, s / inv)

    def _guide(self, z: np.ndarray, rows, step: int, which=None) -> None:
        """transformers' ``UnbatchedClassifierFreeGuidanceLogitsProcessor`` on z, in place:
        ``u`` from the unconditional prompt (each row's last prompt token, or the negative
        prompt with its mask) followed by the ``step`` tokens generated so far."""
        scale = self.guidance[0]
        z -= _logsumexp(z)
        u = self._unconditional(rows, step, which)
        u -= _logsumexp(u)
        z[...] = scale * (z - u) + u

    def _unconditional(self, rows, step: int, which) -> np.ndarray:
        """The unconditional logits (rows, V), float64: the first step runs the prompt with
        a cache over every row, each later step feeds each row's newest token (a finished
        row, left out of ``rows``, keeps its last one) as transformers does."""
        from ..core.tensor import no_grad

        _, model, neg, neg_mask = self.guidance
        state = self._uncond
        every = which is None or list(which) == list(range(len(rows)))
        with no_grad():
            if step == 0 and every:
                if neg is None:
                    ids, mask = np.array([[r[-1]] for r in rows]), None
                else:
                    ids, mask = neg, neg_mask
                out = model(ids, attention_mask=mask, use_cache=True)
                self._uncond = {"cache": out.past_key_values, "mask": mask, "step": 0,
                                "last": ids[:, -1].copy()}
            elif state is not None and step == state["step"] + 1:
                last = state["last"]
                at = np.arange(len(rows)) if which is None else np.asarray(which)
                last[at] = [r[-1] for r in rows]
                mask = state["mask"]
                if mask is not None:
                    mask = state["mask"] = np.concatenate(
                        [mask, np.ones((len(mask), 1), dtype=mask.dtype)], axis=1)
                out = model(last[:, None], attention_mask=mask,
                            past_key_values=state["cache"], use_cache=True)
                state["step"] = step
            else:  # every decoding that takes guidance calls it once per step, in order
                raise RuntimeError(f"guidance_scale: step {step} came after step "
                                   f"{None if state is None else state['step']}")
        u = np.asarray(out.logits.numpy(), dtype=np.float64)[:, -1]
        return u if which is None else u[np.asarray(which)]

    def middle(self, z: np.ndarray, rows, which=None) -> None:
        """After the no-repeat n-grams: the bad words, then the prefix constraint
        (``which``: the batch rows ``rows`` are, None for all)."""
        if self.bad:
            self._apply(z, rows, self.bad)
        if self.prefix is not None:
            self._constrain(z, rows, which)

    def _constrain(self, z: np.ndarray, rows, which) -> None:
        """transformers' ``PrefixConstrainedLogitsProcessor``: the tokens the user's
        function does not allow for a row get ``-inf``."""
        try:
            import torch
        except ImportError:  # numpy rows then
            torch = None
        for r, row in enumerate(rows):
            ids = np.asarray(row, dtype=np.int64)
            batch_id = int(r if which is None else which[r]) // self.beams
            allowed = self.prefix(batch_id, torch.from_numpy(ids) if torch is not None
                                  else ids)
            allowed = np.asarray(allowed.tolist() if hasattr(allowed, "tolist") else
                                 list(allowed), dtype=np.int64).reshape(-1)
            if allowed.size == 0:
                raise ValueError(f"`prefix_allowed_tokens_fn` returned an empty list for "
                                 f"batch ID {batch_id}.This means that the constraint is "
                                 f"unsatisfiable. Please check your implementationof "
                                 f"`prefix_allowed_tokens_fn` ")
            keep = z[r, allowed].copy()
            z[r] = -np.inf
            z[r, allowed] = keep

    def late(self, z: np.ndarray, step: int) -> None:
        """After min-new-tokens: the forced bos after a one-token prompt, the forced eos at
        the last step, invalid values removed, suppressed tokens."""
        if self.forced_bos is not None and self.cur_len == 1:
            z[...] = -np.inf
            z[:, self.forced_bos] = 0
        if self.forced_eos is not None and step == self.max_new - 1:
            z[...] = -np.inf
            z[:, self.forced_eos] = 0
        if self.remove_invalid:
            big = float(np.finfo(np.float32).max)
            z[np.isnan(z)] = 0.0
            z[np.isposinf(z)] = big
            z[np.isneginf(z)] = -big
        if self.decay is not None and step > self.decay[0]:
            start, factor, eos = self.decay
            e = z[:, eos]
            z[:, eos] = e + np.where(np.isfinite(e), np.abs(e) * (factor ** (step - start) - 1),
                                     0.0)
        if self.suppress:
            z[:, self.suppress] = -np.inf
        begin = 1 if self.forced_bos is not None and self.cur_len is not None \
            and self.cur_len - step == 1 else 0  # transformers: begin_index + 1
        if self.begin_suppress and step == begin:
            z[:, self.begin_suppress] = -np.inf

    def top_h_(self, z: np.ndarray, temperature: float = 1.0) -> np.ndarray:
        """transformers' ``TopHLogitsWarper`` (after the temperature, before top-k), in
        place on (n, V) logits ``z``: of the 100 best tokens (their softmax alone), keep them
        in order while their summed entropy terms ``-p log p`` stay within ``top_h`` times
        that softmax's entropy (the best always); the others get ``-inf``. ``temperature``:
        what the kept set is judged on is ``z / temperature``, as transformers' order."""
        if self.top_h is None:
            return z
        t = z / float(temperature or 1.0)
        n = min(100, z.shape[1])
        top = np.argsort(-t, axis=1, kind="stable")[:, :n]
        lg = np.take_along_axis(t, top, 1).astype(np.float32)  # float32 as torch's
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            norm = lg - (lg[:, :1] + np.log(np.exp(lg - lg[:, :1]).sum(axis=1, keepdims=True)))
            p = np.exp(norm)
            p /= p.sum(axis=1, keepdims=True)
            low = np.finfo(np.float32).min  # torch's Categorical.entropy, clamped logits
            tau = np.float32(self.top_h) * -(np.maximum(norm, low) * p).sum(axis=1,
                                                                            keepdims=True)
            terms = -p * np.log(p)  # 0 log 0: nan, as torch's (never kept)
            keep_top = np.cumsum(terms, axis=1) <= tau
        keep_top[:, 0] = True
        keep = np.zeros(z.shape, dtype=bool)
        np.put_along_axis(keep, top, keep_top, 1)
        z[~keep] = -np.inf
        return z

    @property
    def warps(self) -> bool:
        """Whether a warper (``min_p``, ``typical_p``, ``epsilon_cutoff``, ``eta_cutoff``)
        is set."""
        return not (self.min_p is None and self.typical is None and self.epsilon is None
                    and self.eta is None)

    def warp(self, p: np.ndarray, keep: int = 1) -> np.ndarray:
        """The warpers after top-p, in transformers' order, on the sampling probabilities
        (what the softmax of transformers' masked scores is); each keeps the ``keep`` top
        tokens (transformers' ``min_tokens_to_keep``: 1, with beams the eos count + 1) and
        renormalises."""
        if self.min_p is not None:
            p = _keep(p, p >= self.min_p * p.max(axis=1, keepdims=True), keep=keep)
        if self.typical is not None:  # keeps its own most typical tokens, not the top ones
            p = _keep(p, _typical(p, self.typical, keep), top=False)
        if self.epsilon is not None:
            p = _keep(p, p >= self.epsilon, keep=keep)
        if self.eta is not None:
            eta = np.minimum(self.eta, np.sqrt(self.eta) * np.exp(-_entropy(p)))
            p = _keep(p, p >= eta, keep=keep)
        return p

    def beam_step(self, logp: np.ndarray, step: int, sample: bool, keep: int) -> np.ndarray:
        """Beam search's tail, on its (n, V) log-probabilities after the sampling warpers:
        the warpers above when sampling (each keeping ``keep`` tokens; the tokens they drop
        get ``-inf``), then ``renormalize_logits``' log-softmax. Returns ``logp``."""
        if sample and self.warps:
            with np.errstate(invalid="ignore"):
                z = np.exp(logp.astype(np.float64) - logp.max(axis=1, keepdims=True))
            p = z / z.sum(axis=1, keepdims=True)
            logp[(self.warp(p, keep) == 0) & (p > 0)] = -np.inf
        if self.renormalize:
            m = logp.max(axis=1, keepdims=True)
            with np.errstate(invalid="ignore"):
                logp -= m + np.log(np.exp(logp - m).sum(axis=1, keepdims=True))
        return logp


def _logsumexp(z: np.ndarray) -> np.ndarray:
    top = z.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return top + np.log(np.exp(z - top).sum(axis=-1, keepdims=True))


def _guidance(options: dict, model):
    """``(scale, model, negative ids, their mask)`` for ``guidance_scale``, or None (unset,
    or 1: transformers adds no processor then)."""
    scale = options.get("guidance_scale")
    neg, neg_mask = (options.get(k) for k in ("negative_prompt_ids",
                                              "negative_prompt_attention_mask"))
    if scale is None or float(scale) == 1.0:
        return None
    if model is None:
        raise ValueError(f"guidance_scale={scale!r} is run by greedy decoding, sampling and "
                         "beam search here; leave assistant_model out with it")

    def host(x):
        x = x.detach().cpu().numpy() if hasattr(x, "detach") else x
        return None if x is None else np.array(x, dtype=np.int64, ndmin=2)

    return float(scale), model, host(neg), host(neg_mask)


def _fraction(value, name: str):
    if value is None:
        return None
    value = float(value)
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return value


def _entropy(p: np.ndarray) -> np.ndarray:
    """(n, 1) entropy of each row (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1, keepdims=True)


def _keep(p: np.ndarray, mask: np.ndarray, top: bool = True, keep: int = 1) -> np.ndarray:
    """``p`` where ``mask`` (and, ``top``, the ``keep`` top tokens), renormalised."""
    mask = mask.copy()
    if top and keep <= 1:
        mask[np.arange(len(p)), p.argmax(axis=1)] = True
    elif top:
        best = np.argsort(-p, axis=1, kind="stable")[:, :keep]
        np.put_along_axis(mask, best, True, 1)
    keep = mask
    p = np.where(keep, p, 0.0)
    return p / p.sum(axis=1, keepdims=True)


def _typical(p: np.ndarray, mass: float, keep: int = 1) -> np.ndarray:
    """transformers' ``TypicalLogitsWarper``: tokens ranked by |surprise - entropy|, kept up
    to the first rank whose cumulative probability reaches ``mass``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shifted = np.abs(-np.log(p) - _entropy(p))
    order = np.argsort(shifted, axis=1, kind="stable")
    ranked = np.take_along_axis(shifted, order, 1)
    cum = np.cumsum(np.take_along_axis(p, order, 1), axis=1)
    last = np.minimum((cum < mass).sum(axis=1), p.shape[1] - 1)
    limit = ranked[np.arange(len(p)), last][:, None]
    drop = ranked > limit
    drop[:, :keep] = False
    keep = np.ones_like(drop)
    np.put_along_axis(keep, order, ~drop, 1)
    return keep

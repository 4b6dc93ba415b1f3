"""Beam search for ERNIE-4.5, as transformers' ``generate(num_beams=N)`` runs it.

``beam_search(model, input_ids, num_beams=N, ...)`` keeps, per prompt, the ``N`` best running
continuations (by summed log-probability) and the ``N`` best finished ones (summed
log-probability divided by ``new tokens ** length_penalty``), with transformers' rules: each
step looks at the best ``max(2, 1 + n_eos) * N`` candidates of the ``N * V`` ones; a
candidate that emits eos (or reaches ``max_length``) is finished when it ranks among the
first ``N``; ``early_stopping`` True stops a prompt once ``N`` hypotheses are finished, False
once no running beam can beat the worst finished one at its current length, ``"never"``
judges that at ``max_length`` (with a positive length penalty). The processors
(``repetition_penalty``, ``no_repeat_ngram_size``, ``min_new_tokens``, those of
``ernie_generate_processors``: ``bad_words_ids``, ``sequence_bias``, ``suppress_tokens``, ...,
and a user's ``logits_processor``) act on the log-probabilities, as transformers' do; a
user's ``stopping_criteria`` finish a candidate as an eos does.

The prompts are prefilled once (one packed prefill of each row's real tokens: a padded
batch's padding costs nothing) into a :class:`PackedKVCache`, whose rows are then repeated
``N`` times; each step reorders the cache rows by the beam each survivor came from and runs
one position per beam. Scores are float32, as transformers keeps them (its ``-1e9`` marks
included), so ``sequences_scores`` agree to float rounding.
"""

from __future__ import annotations

import numpy as np

from .ernie_generate import PackedKVCache, _host, mask_columns, repetition_penalty_
from .ernie_generate_options import GenerateOutput, _banned_ngrams

__all__ = ["beam_search", "generate_beams", "BeamOptions"]

_BIG = np.float32(-1.0e9)


class BeamOptions:
    """The beam choices checked: ``num_beams``, ``length_penalty`` (1.0), ``early_stopping``
    (False; True or ``"never"``), ``num_return_sequences`` (<= ``num_beams``)."""

    def __init__(self, num_beams, length_penalty=None, early_stopping=None,
                 num_return_sequences=1):
        if not isinstance(num_beams, (int, np.integer)) or num_beams < 1:
            raise ValueError(f"num_beams must be an integer >= 1, got {num_beams!r}")
        self.num_beams = int(num_beams)
        self.length_penalty = 1.0 if length_penalty is None else float(length_penalty)
        early = False if early_stopping is None else early_stopping
        if early not in (True, False, "never"):
            raise ValueError(f"early_stopping must be True, False or 'never', got {early!r}")
        self.early_stopping = early
        n = int(num_return_sequences or 1)
        if n > self.num_beams:
            raise ValueError(f"num_return_sequences={n} is more than num_beams="
                             f"{self.num_beams}: beam search returns at most num_beams "
                             "sequences per prompt (raise num_beams)")
        self.num_return_sequences = n


def beam_search(model, input_ids, *, num_beams: int, max_new_tokens: int,
                rows=None, eos=(), pad=None, length_penalty=None, early_stopping=None,
                num_return_sequences: int = 1, repetition_penalty: float = 1.0,
                no_repeat_ngram_size=None, min_new_tokens: int = 0,
                return_dict_in_generate: bool = False, output_scores: bool = False,
                output_logits: bool = False, warp=None, draw=None, processors=None,
                hooks=None, past=None, fed=None):
    """Beam search over each row of ``input_ids`` (B, T) (host ints; ``rows``: each row's
    (start, end) of real tokens when padded, or the real columns (an int array: a mask
    with holes), None: all real). ``eos``: the ids that finish
    a hypothesis; ``pad``: what fills the shorter returned sequences (transformers: pad,
    else the first eos, else -1). Returns (B * num_return_sequences, T + new) ids, the
    best first per prompt, or with ``return_dict_in_generate`` a :class:`GenerateOutput`
    (``sequences``, ``sequences_scores``, ``scores``: the processed log-probabilities per
    step (B * num_beams, V), ``logits``, ``beam_indices``). Beam sampling
    (``ernie_beam_sample``): ``warp(logp)`` edits each step's processed log-probabilities
    (temperature, top-k, top-p) and ``draw(acc, K)`` picks the candidates in place of the
    top K. ``processors``: an ``ernie_generate_processors.ExtraProcessors`` (sequence bias,
    bad words, forced eos, suppressed tokens, the length decay, with sampling the
    ``min_p`` / ``typical_p`` / ``epsilon_cutoff`` / ``eta_cutoff`` warpers,
    ``renormalize_logits``), each at its place in transformers' order. ``hooks``: the
    user's ``logits_processor`` (on each step's log-probabilities after the processors,
    before the warpers) and ``stopping_criteria`` (on each candidate's sequence: a hit
    finishes it as an eos does), ``ernie_generate_hooks.UserHooks``. ``past``: a cache of
    the prompts' first columns (a second chat turn): only the columns after it are run
    (``ernie_beam_cache.prefill_past``). ``fed``: a list that gets, for each forward run,
    the (B * num_beams, length) rows it read (the expanded prompts, then each step's running
    beams; ``ernie_generate_states.beam_states`` computes transformers' per-step hidden
    states and attentions of them)."""
    opt = BeamOptions(num_beams, length_penalty, early_stopping, num_return_sequences)
    ids = np.asarray(input_ids, dtype=np.int64)
    B, T = ids.shape
    nb, lp, early = opt.num_beams, opt.length_penalty, opt.early_stopping
    eos = list(dict.fromkeys(int(e) for e in eos))  # given order: eos[0] fills
    max_new = int(max_new_tokens)
    max_length = T + max_new
    fill = pad if pad else (eos[0] if eos else -1)
    spans = [np.arange(T)] * B if rows is None else [
        np.arange(*r) if isinstance(r, tuple) else np.asarray(r, dtype=np.int64)
        for r in rows]  # each row's real columns
    prompts = [ids[b, c] for b, c in enumerate(spans)]
    lengths = np.array([len(p) for p in prompts], dtype=np.int64)
    if int(lengths.max()) + max_new > model.config.max_position_embeddings:
        raise ValueError(f"prompt of {int(lengths.max())} tokens + {max_new} new tokens "
                         f"exceeds the context ({model.config.max_position_embeddings} "
                         "positions)")
    if max_new == 0:
        return np.repeat(ids, opt.num_return_sequences, axis=0)
    K = max(2, 1 + len(eos)) * nb  # candidates looked at per prompt and step
    first_nb = np.arange(K) < nb

    running = np.full((B, nb, max_length), fill, dtype=np.int64)
    running[:, :, :T] = ids[:, None, :]
    running_scores = np.zeros((B, nb), dtype=np.float32)
    running_scores[:, 1:] = _BIG
    running_origin = np.full((B, nb, max_new), -1, dtype=np.int64)
    done_seqs = running.copy()
    done_scores = np.full((B, nb), _BIG, dtype=np.float32)
    done_origin = running_origin.copy()
    finished = np.zeros((B, nb), dtype=bool)
    hopeful = np.ones((B, 1), dtype=bool)  # transformers' early-stop heuristic unsatisfied
    kept_scores, kept_logits = [], []

    capacity = int(lengths.max()) + max_new
    start = None
    if past is not None:
        from .ernie_beam_cache import prefill_past

        start = prefill_past(model, past, ids, spans, capacity, nb)
    if start is None:
        cache = PackedKVCache(len(model.model.layers), lengths, capacity)
        cu = np.concatenate([[0], np.cumsum(lengths)])
        positions = np.concatenate([np.arange(n) for n in lengths])
        logits = _host(model.forward_packed(np.concatenate(prompts), cu, positions,
                                            cache=cache, last_only=True)._data)
    else:
        logits, cache = start
    logits = np.repeat(logits, nb, axis=0)  # (B * nb, V)
    _reorder(cache, np.repeat(np.arange(B), nb))
    cur = T
    if fed is not None:
        fed.append(np.repeat(ids, nb, axis=0))
    while True:
        z = logits.astype(np.float32)
        if output_logits:
            kept_logits.append(z.copy())
        logp = z - z.max(axis=-1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(axis=-1, keepdims=True))
        flat = running[:, :, :cur].reshape(B * nb, cur)
        # the repetition penalty reads each row from its first real token (transformers
        # leaves the leading padding out of it, a hole's pad id in), the n-grams the
        # padded row (transformers' run over it)
        real = flat if rows is None else [
            np.concatenate([flat[r, spans[r // nb][0]:spans[r // nb][-1] + 1], flat[r, T:]])
            for r in range(B * nb)]
        _process(logp, flat, real, eos, repetition_penalty, no_repeat_ngram_size,
                 cur - T < int(min_new_tokens or 0), processors, cur - T)
        if hooks and hooks.processors:
            logp = hooks.process(logp, flat).astype(np.float32)
        if warp is not None:
            warp(logp)
        if processors:
            processors.beam_step(logp, cur - T, warp is not None,
                                 len(eos) + 1 if eos else 2)
        if output_scores:
            kept_scores.append(logp.copy())
        V = logp.shape[1]
        acc = (logp.reshape(B, nb, V) + running_scores[:, :, None]).reshape(B, nb * V)
        top = _top_stable(acc, K) if draw is None else draw(acc, K)
        top_lp = np.take_along_axis(acc, top, 1)  # (B, K)
        beam, tok = top // V, top % V
        cand = np.take_along_axis(running, beam[:, :, None], 1)
        cand[:, :, cur] = tok
        cand_origin = np.take_along_axis(running_origin, beam[:, :, None], 1)
        cand_origin[:, :, cur - T] = beam + np.arange(B)[:, None] * nb
        hits = np.isin(tok, eos) | (cur + 1 >= max_length)
        if hooks and hooks.criteria:
            hits |= hooks.stopped(cand[:, :, :cur + 1].reshape(B * K, cur + 1)).reshape(B, K)

        # the best candidates that go on
        go = top_lp + hits.astype(np.float32) * _BIG
        # (sampling can draw candidates tied at -inf / -1e9: ordered as torch.topk orders
        # them, so the dead beams' rows and per-step scores are transformers')
        keep = _topk_order(go, nb) if draw is not None else \
            np.argsort(-go, axis=1, kind="stable")[:, :nb]
        running = np.take_along_axis(cand, keep[:, :, None], 1)
        running_scores = np.take_along_axis(go, keep, 1)
        running_origin = np.take_along_axis(cand_origin, keep[:, :, None], 1)

        # finished hypotheses: the first nb candidates that hit, length-penalised
        just = hits & first_nb[None, :]
        fin = (top_lp / np.float32((cur + 1 - T) ** lp)).astype(np.float32)
        full = finished.all(axis=1, keepdims=True) & (early is True)
        fin += full.astype(np.float32) * _BIG
        fin += (~hopeful).astype(np.float32) * _BIG
        fin += (~just).astype(np.float32) * _BIG
        m_scores = np.concatenate([done_scores, fin], axis=1)
        pick = np.argsort(-m_scores, axis=1, kind="stable")[:, :nb]
        done_seqs = np.take_along_axis(np.concatenate([done_seqs, cand], 1),
                                       pick[:, :, None], 1)
        done_origin = np.take_along_axis(np.concatenate([done_origin, cand_origin], 1),
                                         pick[:, :, None], 1)
        done_scores = np.take_along_axis(m_scores, pick, 1)
        finished = np.take_along_axis(np.concatenate([finished, just], 1), pick, 1)

        cur += 1
        length = (max_length - T) if (early == "never" and lp > 0.0) else (cur - T)
        best = running_scores[:, :1] / np.float32(length ** lp)
        worst = np.where(finished, done_scores.min(axis=1, keepdims=True), _BIG)
        hopeful = hopeful & (best > worst).any(axis=1, keepdims=True)
        if not (hopeful.any() and not (finished.all() and early is True)
                and not hits.all()):
            break
        # each surviving beam continues the cache row it came from
        origin = running_origin[:, :, cur - 1 - T].reshape(-1)
        _reorder(cache, origin)
        if fed is not None:
            fed.append(running[:, :, :cur].reshape(B * nb, cur).copy())
        logits = _host(model.forward_step(running[:, :, cur - 1].reshape(-1), cache)._data)

    n = opt.num_return_sequences
    seqs = done_seqs[:, :n].reshape(B * n, max_length)
    scores = done_scores[:, :n].reshape(B * n)
    origin = done_origin[:, :n].reshape(B * n, max_new)
    generated = int((origin >= 0).sum(axis=1).max())
    seqs = seqs[:, :T + generated]
    if not return_dict_in_generate:
        return seqs
    from .ernie_beam_cache import beam_past

    # the cache's rows: the running beams of the last step, as transformers' last
    # reordering picks them (its torch.topk orders the candidates tied at -1e9 its own way)
    last = np.take_along_axis(cand_origin[:, :, cur - 1 - T], _topk_order(go, nb), 1)
    _reorder(cache, last.reshape(-1))
    return GenerateOutput(sequences=seqs,
                          sequences_scores=scores if output_scores else None,
                          scores=tuple(kept_scores) if output_scores else None,
                          logits=tuple(kept_logits) if output_logits else None,
                          beam_indices=origin[:, :generated],
                          cache=beam_past(model, cache, spans, T, cur - 1, nb))


def _process(logp, histories, real, eos, penalty, no_repeat, forbid_eos, extra=None,
             step: int = 0) -> None:
    """transformers' processors on the log-probabilities (B * nb, V), in place and in its
    order: the sequence bias, repetition penalty, no-repeat n-grams, bad words, eos
    forbidden before min_new_tokens, the forced eos, length decay and suppressed tokens
    (``extra``: an ``ExtraProcessors``; ``step``: the new tokens so far)."""
    extra = extra if extra else None
    if extra is not None:
        extra.early(logp, histories, step)
    if penalty is not None and penalty != 1.0:
        repetition_penalty_(logp, real, penalty)
    if no_repeat:
        for r, seen in enumerate(histories):
            banned = _banned_ngrams(seen, int(no_repeat))
            if banned:
                logp[r, banned] = -np.inf
    if extra is not None:
        extra.middle(logp, histories)
    if forbid_eos and eos:
        logp[:, eos] = -np.inf
    if extra is not None:
        extra.late(logp, step)


class _StopStringCriterion:
    """``stop_strings`` as a stopping criterion (rows (n, T) -> (n,) bool)."""

    def __init__(self, stop):
        self.stop = stop

    def __call__(self, input_ids, scores=None):
        from .ernie_generate_hooks import _host as host

        return np.array([self.stop(row) for row in host(input_ids)], dtype=bool)


def _top_stable(acc: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-acc, axis=1, kind="stable")[:, :k]`` (the k largest of each row, ties
    in index order) without sorting the whole row: a partition finds the k-th value, the
    values above it and the first ties at it are sorted (the N * V candidates of a step:
    a full sort of 128000 scores took 40 ms a step)."""
    B, n = acc.shape
    if n <= 8 * k:
        return np.argsort(-acc, axis=1, kind="stable")[:, :k]
    neg = -acc
    part = np.argpartition(neg, k - 1, axis=1)[:, :k]
    kth = np.take_along_axis(neg, part, 1).max(axis=1)
    out = np.empty((B, k), dtype=np.int64)
    for b in range(B):
        row = neg[b]
        strict = np.flatnonzero(row < kth[b])
        cand = np.sort(np.concatenate([strict, np.flatnonzero(row == kth[b])[:k - len(strict)]]))
        out[b] = cand[np.argsort(row[cand], kind="stable")]
    return out


def _topk_order(values, k: int) -> np.ndarray:
    """The indices (B, k) of each row's k largest ``values``, ties ordered as torch.topk
    orders them when torch is there (transformers' choice), else first come first."""
    try:
        import torch
    except ImportError:
        return np.argsort(-values, axis=1, kind="stable")[:, :k]
    return torch.topk(torch.from_numpy(np.ascontiguousarray(values)), k, dim=1).indices \
        .numpy().astype(np.int64)


def _reorder(cache: PackedKVCache, index) -> None:
    """Cache rows taken in ``index`` order (beam ``i`` continues row ``index[i]``)."""
    index = np.asarray(index, dtype=np.int64)
    for layer in range(len(cache.k)):
        if cache.k[layer] is not None:
            xi = index if isinstance(cache.k[layer], np.ndarray) else \
                _xp_index(cache.k[layer], index)
            cache.k[layer] = cache.k[layer][xi]
            cache.v[layer] = cache.v[layer][xi]
    cache.lengths = cache.lengths[index]


def _xp_index(array, index):
    from skiff.kernels.backend import get_array_module

    return get_array_module(array).asarray(index)


def generate_beams(model, input_ids=None, max_new_tokens=None, *, attention_mask=None,
                   eos_token_id="config", pad_token_id="config", repetition_penalty=None,
                   do_sample=None, temperature=None, top_k=None, top_p=None, streamer=None,
                   stop_strings=None, use_cache=True, seed=None, generator=None,
                   tokenizer=None, logits_processor=None, stopping_criteria=None,
                   fed=None, **options):
    """``model.generate(..., num_beams=N)`` as transformers takes it: ``input_ids`` (B, T)
    (numpy, list or CPU torch tensor), ``attention_mask`` of a left-padded batch,
    ``max_new_tokens`` / ``max_length``, ``length_penalty``, ``early_stopping``,
    ``num_return_sequences``, ``eos_token_id``, ``no_repeat_ngram_size``,
    ``min_new_tokens`` / ``min_length``, ``repetition_penalty``, ``generation_config``,
    ``return_dict_in_generate`` with ``output_scores`` / ``output_logits``; with
    ``do_sample=True`` transformers' beam sampling (``temperature``, ``top_k``, ``top_p``;
    ``seed`` or ``generator``: a numpy Generator, or a torch Generator for transformers'
    own draws; ``ernie_beam_sample``), the processors of ``ernie_generate_processors``
    (``bad_words_ids``, ``sequence_bias``, ``suppress_tokens``, ``min_p``, ...) and a user's
    ``logits_processor`` / ``stopping_criteria`` (``ernie_generate_hooks``; ``max_time``
    too; ``stop_strings`` with ``tokenizer``, as transformers' ``StopStringCriteria``: a
    candidate reaching one finishes). The other options are refused by name; a
    ``streamer`` as transformers refuses it. ``fed``: see :func:`beam_search` (round 40)."""
    if streamer is not None:  # transformers' own refusal, word for word
        raise ValueError("`streamer` cannot be used with beam search (yet!). Make sure that "
                         "`num_beams` is set to 1.")
    del use_cache  # beams always use the cache
    past = options.pop("past_key_values", None)  # a second turn's cache: read (round 39)
    from ..core.tensor import no_grad
    from .ernie_generate_options import new_token_counts, resolve_options

    if input_ids is None:
        input_ids = options.pop("inputs", None)
        if input_ids is None:
            raise TypeError("generate needs the prompt ids (input_ids)")
    from .ernie_generate import inferred_mask
    from .ernie_generate_hooks import with_max_time

    attention_mask = inferred_mask(model, input_ids, attention_mask, pad_token_id,
                                   eos_token_id, options)

    stopping_criteria = with_max_time(stopping_criteria, options)
    options = model._checkpoint_options(max_new_tokens, options)
    named, extra = resolve_options(dict(
        max_new_tokens=options.pop("max_new_tokens", max_new_tokens), do_sample=do_sample,
        temperature=temperature, top_k=top_k, top_p=top_p,
        repetition_penalty=repetition_penalty,
        eos_token_id=eos_token_id, pad_token_id=pad_token_id, stop_strings=stop_strings),
        options, beams=True)
    if named["stop_strings"]:  # transformers' StopStringCriteria: a candidate whose text
        # reaches a stop string finishes as at an eos (that token kept)
        from .ernie_generate import StopStrings
        from .ernie_generate_hooks import _as_list

        stop = StopStrings(tokenizer or getattr(model, "tokenizer", None),
                           named["stop_strings"])
        stopping_criteria = [*_as_list(stopping_criteria, "stopping_criteria"),
                             _StopStringCriterion(stop)]
    from .ernie_generate_processors import OPTIONS, ExtraProcessors

    if int(extra["num_beams"] or 1) == 1:
        raise ValueError("num_beams=1 is greedy decoding: call model.generate, or pass "
                         "num_beams > 1 here")
    sample, temp, k, p, _ = model._sampling(named["do_sample"], named["temperature"],
                                            named["top_k"], named["top_p"], None)
    ids = np.array(_host(input_ids), dtype=np.int64, ndmin=2)
    if ids.shape[1] == 0:
        raise ValueError("generate needs at least one prompt token per row")
    rows = None
    if attention_mask is not None:
        rows = mask_columns(np.array(_host(attention_mask), ndmin=2), ids)
    max_new, min_new = new_token_counts(extra, named["max_new_tokens"], ids.shape[1])
    if not isinstance(max_new, (int, np.integer)) or max_new < 0:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new!r}")
    eos = model._generation_value("eos_token_id", named["eos_token_id"])
    eos = [] if eos is None else np.atleast_1d(eos).tolist()
    pad = model._generation_value("pad_token_id", named["pad_token_id"])
    penalty = model._sampling(False, None, None, None, named["repetition_penalty"])[4]
    if extra.get("guidance_scale") not in (None, 1, 1.0) \
            and extra.get("negative_prompt_ids") is not None:
        # transformers' unconditional run keeps the negative prompt's B rows beside the
        # B * num_beams beams and fails on the sizes ("Sizes of tensors must match")
        raise ValueError("negative_prompt_ids with beam search (num_beams > 1) is not "
                         "supported (transformers fails on it too): guidance_scale alone "
                         "guides each beam on its own tokens, or leave num_beams out")
    # guidance_scale: the unconditional run over the B * num_beams rows, each fed its
    # newest token, its cache rows never reordered with the beams (transformers' own)
    procs = ExtraProcessors({k: extra[k] for k in OPTIONS}, eos=eos, max_new=max_new,
                            model=model,
                            beams=max(int(extra["num_beams"]),
                                      int(extra["num_return_sequences"] or 1)))
    from .ernie_generate_hooks import UserHooks

    hooks = UserHooks(logits_processor, stopping_criteria, pad=pad)
    warp = draw = None
    if sample:
        from .ernie_beam_sample import make_draw, warp_log_probs
        from .ernie_generate import _check_sampling

        _check_sampling(max_new, True, temp, k, p, penalty)
        keep = len(eos) + 1 if eos else 2

        def warp(logp):
            if procs.top_h is not None:  # between the temperature and top-k
                logp /= np.float32(temp if temp is not None else 1.0)
                procs.top_h_(logp)
                return warp_log_probs(logp, 1.0, k, p, keep)
            return warp_log_probs(logp, temp, k, p, keep)

        draw = make_draw(seed, generator)
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            return beam_search(
                model, ids, num_beams=int(extra["num_beams"]), max_new_tokens=max_new,
                rows=rows, eos=eos, pad=pad, length_penalty=extra["length_penalty"],
                early_stopping=extra["early_stopping"],
                num_return_sequences=extra["num_return_sequences"],
                repetition_penalty=penalty,
                no_repeat_ngram_size=extra["no_repeat_ngram_size"], min_new_tokens=min_new,
                return_dict_in_generate=extra["return_dict_in_generate"],
                output_scores=extra["output_scores"], output_logits=extra["output_logits"],
                warp=warp, draw=draw, processors=procs, hooks=hooks, past=past, fed=fed)
    finally:
        model.train(was_training)

"""Beam search (greedy and sampled) with transformers' processor options and a user's
``logits_processor`` / ``stopping_criteria`` (round 33; each was "beam search does not take
..." / "with beam search are not supported"): ``bad_words_ids``, ``sequence_bias``,
``suppress_tokens``, ``begin_suppress_tokens``, ``forced_eos_token_id``,
``exponential_decay_length_penalty``, ``renormalize_logits`` and, sampling, the ``min_p`` /
``typical_p`` / ``epsilon_cutoff`` / ``eta_cutoff`` warpers (keeping eos count + 1 tokens, as
transformers' ``min_tokens_to_keep`` with beams). Compared with transformers' ``generate``
on a left-padded batch: the same sequences, ``sequences_scores`` and per-step scores (also
of the dead beams a restrictive warper leaves: their rows are ordered as torch orders ties)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch, transformers


def _pair(shape, tmp_path_factory):
    folder = tmp_path_factory.mktemp("beamproc-" + shape)
    _, ref = make_checkpoint(folder, shape)
    ids = np.random.default_rng(1).integers(3, 60, (2, 5))
    mask = np.ones_like(ids)
    ids[1, :2], mask[1, :2] = 0, 0
    with torch.no_grad():
        free = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            max_new_tokens=8, num_beams=3, do_sample=False,
                            eos_token_id=None).numpy()
    return ref, from_pretrained(folder), ids, mask, free


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return _pair("dense-gqa-tied", tmp_path_factory)


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    return _pair("moe-shared", tmp_path_factory)


def _tokens(free):
    a, b, c = (int(free[0, 5 + i]) for i in range(3))
    return a, b, c, int(free[1, 6])


GREEDY = [
    lambda a, b, c, d: dict(sequence_bias={(a,): -5.0, (a, b): 3.0, (d,): 2.5}),
    lambda a, b, c, d: dict(sequence_bias=[[[b], -4.0]], bad_words_ids=[[c], [a, b]]),
    lambda a, b, c, d: dict(bad_words_ids=[[a], [d]], eos_token_id=[a]),
    lambda a, b, c, d: dict(suppress_tokens=[a, d], begin_suppress_tokens=[b]),
    lambda a, b, c, d: dict(forced_eos_token_id=c, eos_token_id=[c]),
    lambda a, b, c, d: dict(begin_suppress_tokens=[a], no_repeat_ngram_size=2,
                            repetition_penalty=1.3, renormalize_logits=True),
    lambda a, b, c, d: dict(exponential_decay_length_penalty=(2, 1.5), eos_token_id=[c, d]),
    lambda a, b, c, d: dict(renormalize_logits=True, bad_words_ids=[[b]], min_new_tokens=3,
                            eos_token_id=[a, c]),
]
SAMPLED = [
    lambda a, b, c, d: dict(min_p=0.05),
    lambda a, b, c, d: dict(typical_p=0.6, eos_token_id=[a, c]),
    lambda a, b, c, d: dict(epsilon_cutoff=0.02),
    lambda a, b, c, d: dict(eta_cutoff=0.01, renormalize_logits=True),
    lambda a, b, c, d: dict(min_p=0.2, top_k=10, bad_words_ids=[[a]]),  # dead beams
]


def _compare(ref, model, ids, mask, kw, sample, seed):
    kw = dict(kw)
    kw.setdefault("eos_token_id", None)
    common = dict(max_new_tokens=8, num_beams=3, num_return_sequences=2, do_sample=sample,
                  return_dict_in_generate=True, output_scores=True)
    torch.manual_seed(seed)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **common, **kw)
    draws = dict(generator=torch.Generator().manual_seed(seed)) if sample else {}
    got = model.generate(ids, attention_mask=mask, **common, **kw, **draws)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    np.testing.assert_allclose(got.sequences_scores, want.sequences_scores.numpy(), atol=1e-4)
    assert len(got.scores) == len(want.scores)
    for g, w in zip(got.scores, want.scores):
        w = w.numpy()
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        fin = np.isfinite(w)
        np.testing.assert_allclose(g[fin], w[fin], atol=1e-3)
    return got


@pytest.mark.parametrize("case", range(len(GREEDY)))
def test_beam_search_processors_as_transformers(pair, case):
    ref, model, ids, mask, free = pair
    kw = GREEDY[case](*_tokens(free))
    got = _compare(ref, model, ids, mask, kw, False, case)
    plain = model.generate(ids, attention_mask=mask, max_new_tokens=8, num_beams=3,
                           num_return_sequences=2, eos_token_id=kw.get("eos_token_id"),
                           min_new_tokens=kw.get("min_new_tokens"),
                           return_dict_in_generate=True, output_scores=True)
    # each option changes the result (the sequences or, renormalised, the scores)
    assert got.sequences.shape != plain.sequences.shape or \
        (got.sequences != plain.sequences).any() or \
        np.abs(got.sequences_scores - plain.sequences_scores).max() > 1e-3


@pytest.mark.parametrize("case", range(len(SAMPLED)))
def test_beam_sampling_warpers_as_transformers(pair, case):
    ref, model, ids, mask, free = pair
    _compare(ref, model, ids, mask, SAMPLED[case](*_tokens(free)), True, 10 + case)


class _Shift(transformers.LogitsProcessor):
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __call__(self, input_ids, scores):
        scores = scores.clone()
        scores[:, self.a] -= 3.0
        scores[:, self.b] += 0.5 * (input_ids.shape[1] % 2)
        return scores


class _StopOn(transformers.StoppingCriteria):
    def __init__(self, token):
        self.token = token

    def __call__(self, input_ids, scores, **kwargs):
        return input_ids[:, -1] == self.token


@pytest.mark.parametrize("sample", [False, True])
def test_beam_user_hooks_as_transformers(pair, sample):
    ref, model, ids, mask, free = pair
    a, b, _, d = _tokens(free)
    cases = [dict(logits_processor=transformers.LogitsProcessorList([_Shift(a, d)])),
             dict(stopping_criteria=transformers.StoppingCriteriaList([_StopOn(b)])),
             dict(stopping_criteria=[_StopOn(d)], logits_processor=[_Shift(b, a)],
                  eos_token_id=[a], top_k=8)]
    for i, kw in enumerate(cases):
        _compare(ref, model, ids, mask, kw, sample, 20 + i)


def test_beam_max_time_stops(pair):
    _, model, ids, mask, _ = pair
    out = model.generate(ids, attention_mask=mask, max_new_tokens=30, num_beams=2,
                         eos_token_id=None, max_time=0.0)
    assert out.shape[1] == ids.shape[1] + 1  # every candidate stopped after one step


def test_moe_beams_with_processors(moe):
    ref, model, ids, mask, free = moe
    _compare(ref, model, ids, mask, GREEDY[1](*_tokens(free)), False, 30)
    _compare(ref, model, ids, mask, SAMPLED[4](*_tokens(free)), True, 31)

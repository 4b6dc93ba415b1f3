"""transformers' last refused ``generate`` options (round 34, h6), each against transformers:
``encoder_repetition_penalty`` (a decoder-only model's "encoder input" is the padded
prompt), ``forced_bos_token_id`` (after a one-token prompt), ``remove_invalid_values``,
greedy, sampled and with beams; beams with ``stop_strings`` (transformers'
``StopStringCriteria`` finishes a candidate) and a ``streamer`` refused with transformers'
own message."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, make_sentencepiece_checkpoint, torch, transformers


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("opts34")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    return ref, from_pretrained(folder)


def _batch():
    ids = np.random.default_rng(3).integers(3, 60, (2, 6))
    mask = np.ones_like(ids)
    ids[1, :2], mask[1, :2] = 0, 0
    return ids, mask


def _same(got, want, ids=None):
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    for g, w in zip(got.scores, want.scores):
        w = w.numpy()
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        ok = np.isfinite(w)
        np.testing.assert_allclose(g[ok], w[ok], rtol=2e-5, atol=2e-4)


CASES = [dict(encoder_repetition_penalty=3.0),
         dict(encoder_repetition_penalty=0.5, repetition_penalty=1.3),
         dict(encoder_repetition_penalty=2.0, do_sample=True, top_k=20),
         dict(remove_invalid_values=True, bad_words_ids=[[7], [9]], suppress_tokens=[5]),
         dict(encoder_repetition_penalty=2.5, num_beams=3, num_return_sequences=2),
         dict(remove_invalid_values=True, suppress_tokens=[4, 8], num_beams=2)]


@pytest.mark.parametrize("kw", CASES)
def test_options_as_transformers(pair, kw):
    ref, model = pair
    ids, mask = _batch()
    common = dict(max_new_tokens=6, eos_token_id=None, return_dict_in_generate=True,
                  output_scores=True, **kw)
    common.setdefault("do_sample", False)
    torch.manual_seed(0)  # transformers' draws; skiff draws from a generator so seeded
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **common)
    gen = torch.Generator().manual_seed(0) if common["do_sample"] else None
    got = model.generate(ids, attention_mask=mask, generator=gen, **common)
    _same(got, want)


def test_the_encoder_penalty_changes_the_tokens(pair):
    """Not a no-op: a strong penalty < 1 keeps the prompt's tokens out, > 1 brings them."""
    _, model = pair
    ids, _ = _batch()
    plain = model.generate(ids[:1], max_new_tokens=8, eos_token_id=None)
    more = model.generate(ids[:1], max_new_tokens=8, eos_token_id=None,
                          encoder_repetition_penalty=50.0)
    assert set(more[0, 6:].tolist()) <= set(ids[0].tolist())
    assert not np.array_equal(plain, more)


@pytest.mark.parametrize("kw", [{}, dict(begin_suppress_tokens=[11, 12]),
                                dict(num_beams=2)])
def test_forced_bos_after_a_one_token_prompt(pair, kw):
    ref, model = pair
    common = dict(max_new_tokens=4, eos_token_id=None, forced_bos_token_id=11,
                  return_dict_in_generate=True, output_scores=True, do_sample=False, **kw)
    for prompt in ([[5]], [[5, 6, 7]]):  # forced only when one token wide
        with torch.no_grad():
            want = ref.generate(input_ids=torch.tensor(prompt), **common)
        got = model.generate(np.array(prompt), **common)
        _same(got, want)
    assert got.sequences[0, 3] != 11  # not forced after a longer prompt


def test_invalid_values_become_float32_extremes(pair):
    _, model = pair
    ids, _ = _batch()
    got = model.generate(ids[:1], max_new_tokens=2, eos_token_id=None, bad_words_ids=[[3]],
                         suppress_tokens=[4], remove_invalid_values=True,
                         return_dict_in_generate=True,                         output_scores=True)
    assert got.scores[0][0, 3] == -np.finfo(np.float32).max
    assert got.scores[0][0, 4] == -np.inf  # suppressed after: transformers' order
    assert np.isfinite(np.delete(got.scores[0], 4, axis=1)).all()


def test_option_mistakes(pair):
    _, model = pair
    with pytest.raises(ValueError, match="encoder_repetition_penalty"):
        model.generate([[4, 5]], max_new_tokens=2, encoder_repetition_penalty=0)
    with pytest.raises(ValueError, match="forced_bos_token_id"):
        model.generate([[4, 5]], max_new_tokens=2, forced_bos_token_id="x")


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    folder = tmp_path_factory.mktemp("stop34")
    ref, tok = make_sentencepiece_checkpoint(folder)
    return ref, from_pretrained(folder), tok


@pytest.mark.parametrize("span", [(0, 2), (2, 4)])
def test_beams_stop_strings_as_transformers(sp, span):
    ref, model, tok = sp
    ids = tok(["The quick brown", "Hello world"], add_special_tokens=False,
              return_tensors="pt", padding=True, padding_side="left")
    T = ids["input_ids"].shape[1]
    common = dict(max_new_tokens=10, num_beams=3, do_sample=False, pad_token_id=0,
                  eos_token_id=None, return_dict_in_generate=True, output_scores=True)
    with torch.no_grad():
        free = ref.generate(**ids, **common)
    stop = tok.decode(free.sequences[0, T:][span[0]:span[1]]).strip()[:3]
    assert stop
    with torch.no_grad():
        want = ref.generate(**ids, stop_strings=[stop], tokenizer=tok, **common)
    got = model.generate(ids["input_ids"].numpy(), attention_mask=ids["attention_mask"].numpy(),
                         stop_strings=[stop], **common)
    assert not torch.equal(want.sequences, free.sequences)  # the stop string acted
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    np.testing.assert_allclose(got.sequences_scores, want.sequences_scores.numpy(), atol=1e-5)


def test_beams_refuse_a_streamer_as_transformers(sp):
    ref, model, tok = sp
    streamer = transformers.TextStreamer(tok)
    with pytest.raises(ValueError) as want, torch.no_grad():
        ref.generate(torch.tensor([[5, 6]]), max_new_tokens=2, num_beams=2, streamer=streamer)
    with pytest.raises(ValueError) as got:
        model.generate([[5, 6]], max_new_tokens=2, num_beams=2, streamer=streamer)
    assert str(got.value) == str(want.value)

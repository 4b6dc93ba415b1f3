"""``model.generate`` called with what a transformers user passes (round 26): ``max_length``,
``min_new_tokens``, ``no_repeat_ngram_size``, ``eos_token_id`` lists, ``generation_config``,
``return_dict_in_generate`` with ``output_scores`` / ``output_logits``,
``num_return_sequences``, torch tensors straight from ``tok(..., return_tensors="pt")`` and a
``TextStreamer``; each compared with transformers' ``generate`` on the same checkpoint (its KV
cache). Before, every one of these options was a TypeError, and beam search or a typo was an
"unexpected keyword argument" rather than a line saying what is not supported."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers

PROMPTS = ["Hello world", "What is two plus two? Four.", "The quick brown fox"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sp-generate")
    ref, tok = make_sentencepiece_checkpoint(folder)
    return ref, tok, from_pretrained(folder)


def _hf(ref, enc, **kw):
    with torch.no_grad():
        return ref.generate(**enc, **kw)


def _padded(tok):
    return tok(PROMPTS, padding=True, padding_side="left", return_tensors="pt")


CASES = [
    # no eos: the rows run long enough to repeat (greedy alone repeats a bigram in row 1)
    dict(max_new_tokens=16, no_repeat_ngram_size=2, eos_token_id=None),
    dict(max_new_tokens=12, no_repeat_ngram_size=1, eos_token_id=None),
    dict(max_length=19),  # total length, the padded prompt counted
    dict(max_new_tokens=8, min_new_tokens=6),
    dict(max_new_tokens=8, min_length=14),
    dict(generation_config="config"),  # a GenerationConfig object: its values are used
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_greedy_options_equal_transformers(pair, case):
    ref, tok, model = pair
    kw = dict(CASES[case])
    if kw.get("generation_config") == "config":
        kw["generation_config"] = transformers.GenerationConfig(max_new_tokens=5,
                                                                no_repeat_ngram_size=3)
    # eos as a list (one id each prompt's greedy answer reaches early) makes min_* matter
    free = _hf(ref, _padded(tok), do_sample=False, max_new_tokens=8).numpy()
    kw.setdefault("eos_token_id", [int(free[0, -5]), int(free[1, -6]), tok.eos_token_id])
    enc = _padded(tok)
    want = _hf(ref, enc, do_sample=False, **kw).numpy()
    got = model.generate(**{k: v.numpy() for k, v in enc.items()}, do_sample=False, **kw)
    np.testing.assert_array_equal(got, want)
    one = tok(PROMPTS[1], return_tensors="pt")  # one row: the cached loop, not the batch
    want = _hf(ref, one, do_sample=False, **kw).numpy()
    np.testing.assert_array_equal(model.generate(one["input_ids"], do_sample=False, **kw),
                                  want)


def test_torch_tensors_and_text_streamer(pair):
    """``model.generate(**tok(..., return_tensors="pt"))`` and transformers' ``TextStreamer``
    print the same text as transformers."""
    ref, tok, model = pair
    enc = _padded(tok)
    np.testing.assert_array_equal(model.generate(**enc, max_new_tokens=6, do_sample=False),
                                  _hf(ref, enc, max_new_tokens=6, do_sample=False).numpy())
    one = tok(PROMPTS[2], return_tensors="pt")
    printed = []
    for gen in (lambda s: _hf(ref, one, max_new_tokens=10, do_sample=False, streamer=s),
                lambda s: model.generate(**one, max_new_tokens=10, do_sample=False, streamer=s)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            gen(transformers.TextStreamer(tok, skip_prompt=True))
        printed.append(out.getvalue())
    assert printed[0] and printed[1] == printed[0]


@pytest.mark.parametrize("padded", [False, True])
def test_scores_and_logits_equal_transformers(pair, padded):
    """``return_dict_in_generate`` with ``output_scores`` (after the processors: -inf where
    no_repeat_ngram_size / min_new_tokens forbid) and ``output_logits``: transformers'
    per-step arrays (rows still generating; a padded row that finished is NaN here)."""
    ref, tok, model = pair
    kw = dict(do_sample=False, max_new_tokens=7, no_repeat_ngram_size=2, min_new_tokens=3,
              repetition_penalty=1.2, eos_token_id=[tok.eos_token_id, 280],
              return_dict_in_generate=True, output_scores=True, output_logits=True)
    enc = _padded(tok) if padded else tok(PROMPTS[1:2] * 2, return_tensors="pt")
    want = _hf(ref, enc, **kw)
    got = model.generate(**{k: v.numpy() for k, v in enc.items()}, **kw)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    assert got["sequences"] is got.sequences and got[0] is got.sequences
    assert len(got.scores) == len(want.scores) == len(got.logits) == len(want.logits)
    for mine, theirs in [*zip(got.scores, want.scores), *zip(got.logits, want.logits)]:
        theirs = theirs.numpy()
        live = ~np.isnan(mine).any(axis=1)
        assert live.any()
        assert (np.isinf(mine[live]) == np.isinf(theirs[live])).all()
        finite = np.isfinite(theirs[live])
        np.testing.assert_allclose(mine[live][finite], theirs[live][finite], atol=1e-4)
    assert np.isinf(got.scores[0]).any()  # min_new_tokens forbade eos


def test_sampling_scores_and_num_return_sequences(pair):
    """Sampling: the first step's scores are transformers' warped logits (logits /
    temperature where top-k/top-p keep them, -inf elsewhere); ``num_return_sequences``
    repeats each prompt as transformers orders them (b0, b0, b1, b1)."""
    ref, tok, model = pair
    enc = _padded(tok)
    kw = dict(do_sample=True, temperature=0.7, top_k=7, top_p=0.9, max_new_tokens=4,
              num_return_sequences=2, return_dict_in_generate=True, output_scores=True)
    torch.manual_seed(0)
    want = _hf(ref, enc, **kw)
    got = model.generate(**enc, seed=0, **kw)
    assert got.sequences.shape[0] == want.sequences.shape[0] == 6
    np.testing.assert_array_equal(got.sequences[:, :enc["input_ids"].shape[1]],
                                  want.sequences[:, :enc["input_ids"].shape[1]].numpy())
    mine, theirs = got.scores[0], want.scores[0].numpy()
    assert (np.isinf(mine) == np.isinf(theirs)).all()
    np.testing.assert_allclose(mine[np.isfinite(mine)], theirs[np.isfinite(theirs)], atol=1e-4)
    first = got.sequences[:, enc["input_ids"].shape[1]]  # each drawn among what was kept
    assert np.isfinite(mine[np.arange(6), first]).all()
    with pytest.raises(ValueError, match="num_return_sequences=2 with greedy"):
        model.generate(**enc, do_sample=False, num_return_sequences=2)


@pytest.mark.parametrize("kw, says", [
    (dict(num_beams=2, num_beam_groups=2, diversity_penalty=0.5), "num_beam_groups"),
    # r39: guidance with beams runs (test_ernie_beam_guidance_r39h6); a negative prompt
    # with beams fails in transformers too
    (dict(guidance_scale=2.0, num_beams=2, negative_prompt_ids=[[5, 6]]),
     "negative_prompt_ids with beam search"),
    (dict(force_words_ids=[[5, 6]]), "force_words_ids.*sequence_bias"),  # contrastive: r28
    (dict(constraints=["x"], num_beams=2), "constraints.*sequence_bias"),
    # r40: output_attentions / output_hidden_states with beams run
    # (test_ernie_beam_states_r40h9; greedy / sampling: test_ernie_generate_states_r28)
    (dict(max_new_tokns=5), "max_new_tokns"),
])
def test_unsupported_options_are_one_error(pair, kw, says):
    """Options skiff does not implement are refused by name (transformers would run them:
    never silently ignored); a misspelt one too. Their neutral values pass."""
    ref, tok, model = pair
    ids = tok(PROMPTS[0], return_tensors="np")["input_ids"]
    with pytest.raises(ValueError, match=says):
        model.generate(ids, max_new_tokens=2, **kw)
    neutral = model.generate(ids, max_new_tokens=3, do_sample=False, num_beams=1,
                             typical_p=1.0, bad_words_ids=None, length_penalty=1.0)
    np.testing.assert_array_equal(neutral, _hf(ref, tok(PROMPTS[0], return_tensors="pt"),
                                               max_new_tokens=3, do_sample=False).numpy())


@pytest.mark.parametrize("config", [dict(max_new_tokens=6, no_repeat_ngram_size=2),
                                    dict(max_length=13, min_new_tokens=4)])
def test_checkpoint_generation_config_lengths(tmp_path, config):
    """A ``generation_config.json`` that sets lengths or processors is honoured when the
    call does not say (transformers does; skiff read only its sampling choices)."""
    import json

    make_sentencepiece_checkpoint(tmp_path)
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **config}))
    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    tok = transformers.AutoTokenizer.from_pretrained(tmp_path)
    model = from_pretrained(tmp_path)
    enc = _padded(tok)
    free = _hf(ref, enc, do_sample=False, max_new_tokens=8).numpy()
    eos = [int(free[0, -5]), int(free[1, -6]), tok.eos_token_id]
    for kw in ({}, {"eos_token_id": eos}, {"max_new_tokens": 3}):
        want = _hf(ref, enc, do_sample=False, **kw).numpy()
        np.testing.assert_array_equal(model.generate(**enc, do_sample=False, **kw), want)


def test_moe_padded_options_equal_transformers(tmp_path):
    """An MoE checkpoint, left-padded random prompts (the pad id 0 is also a token row 0
    generates): no-repeat n-grams run over the padding as transformers' do (skiff's ran over
    the real tokens and let row 0 repeat "0 0"), min_new_tokens with an eos list,
    max_length with a repetition penalty, and the per-step scores."""
    from .ernie_reference import make_checkpoint

    _, ref = make_checkpoint(tmp_path, "moe-shared")
    model = from_pretrained(tmp_path)
    ids = np.random.default_rng(0).integers(3, 80, (3, 9))
    mask = np.ones_like(ids)
    mask[0, :3] = mask[2, :5] = 0
    ids[mask == 0] = 0
    enc = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    for kw in (dict(max_new_tokens=12, no_repeat_ngram_size=2, eos_token_id=None),
               dict(max_new_tokens=8, min_new_tokens=5, eos_token_id=[5, 7, 9]),
               dict(max_length=15, repetition_penalty=1.4, eos_token_id=None),
               dict(max_new_tokens=6, eos_token_id=None, return_dict_in_generate=True,
                    output_scores=True)):
        want = _hf(ref, enc, do_sample=False, **kw)
        got = model.generate(ids, attention_mask=mask, do_sample=False, **kw)
        if kw.get("return_dict_in_generate"):
            for mine, theirs in zip(got.scores, want.scores):
                np.testing.assert_allclose(mine, theirs.numpy(), atol=1e-4)
            got, want = got.sequences, want.sequences
        np.testing.assert_array_equal(got, want.numpy())

"""``generate(..., assistant_model=draft)`` (round 35, h6; was "does not support
assistant_model"): transformers' assisted decoding. A one-row greedy call drafts with the
assistant and checks the proposals in one forward of the model (``ernie_assisted``); the
tokens equal transformers' assisted (and plain) greedy tokens. Other calls decode without
the draft; transformers' refusals are kept word for word."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

IDS = np.array([[5, 6, 7, 8, 9, 10]])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    a, b = tmp_path_factory.mktemp("main35"), tmp_path_factory.mktemp("draft35")
    _, ref = make_checkpoint(a, "dense-gqa-tied", seed=0)
    _, ref_draft = make_checkpoint(b, "dense-gqa-tied", seed=1)
    return ref, ref_draft, from_pretrained(a), from_pretrained(b)


@pytest.mark.parametrize("kw", [
    dict(max_new_tokens=30, eos_token_id=None),
    dict(max_new_tokens=30, eos_token_id=3),   # stops at the eos inside a checked proposal
    dict(max_new_tokens=30, eos_token_id=None, num_assistant_tokens=3),
    dict(max_length=15, eos_token_id=None),
])
def test_greedy_as_transformers_assisted(models, kw):
    ref, ref_draft, model, draft = models
    with torch.no_grad():
        want = ref.generate(torch.tensor(IDS), assistant_model=ref_draft, pad_token_id=0,
                            **kw).numpy()
    calls = []
    forward = model.forward
    model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    try:
        got = model.generate(IDS, assistant_model=draft, **kw)
    finally:
        del model.forward
    np.testing.assert_array_equal(got, want)
    assert len(calls) >= 2  # the drafting path ran (one prefill, then checks)


def test_self_draft_accepts_every_proposal(models):
    """The model as its own draft: each check keeps all ``num_assistant_tokens`` proposals
    and adds one, so 30 tokens take 3 forwards of the model (not 30): the prompt with the
    first proposal (transformers' order, round 36), then 11 and 8 positions. (Without the
    confidence threshold off, the tiny random draft's ~1/96 probabilities end each round
    after one proposal, as transformers' ``assistant_confidence_threshold=0.4`` does.)"""
    _, _, model, _ = models
    twin = from_pretrained_like(model)
    calls = []
    forward = model.forward
    model.forward = lambda *a, **k: calls.append(a[0].shape) or forward(*a, **k)
    try:
        got = model.generate(IDS, max_new_tokens=30, eos_token_id=None, assistant_model=twin,
                             num_assistant_tokens=10, assistant_confidence_threshold=0)
    finally:
        del model.forward
    np.testing.assert_array_equal(got, model.generate(IDS, max_new_tokens=30,
                                                      eos_token_id=None))
    assert [c[1] for c in calls] == [16, 11, 8], calls


def from_pretrained_like(model):
    """A second handle on the same weights (its forward not counted)."""
    import copy

    return copy.copy(model)


def test_other_calls_decode_without_the_draft(models):
    """A repetition penalty decodes without the draft (the same tokens); a batch is refused
    as transformers refuses it (round 36: it decoded without the draft)."""
    _, _, model, draft = models
    got = model.generate(IDS, max_new_tokens=6, assistant_model=draft, repetition_penalty=1.3,
                         eos_token_id=None)
    np.testing.assert_array_equal(got, model.generate(IDS, max_new_tokens=6,
                                                      repetition_penalty=1.3, eos_token_id=None))
    with pytest.raises(ValueError, match="only supported for batch_size = 1"):
        model.generate(np.repeat(IDS, 2, 0), max_new_tokens=6, assistant_model=draft,
                       do_sample=True, eos_token_id=None)


def test_transformers_refusals(models):
    _, _, model, draft = models
    with pytest.raises(ValueError, match="`assistant_tokenizer` is not required"):
        model.generate(IDS, max_new_tokens=3, assistant_model=draft, assistant_tokenizer=1)
    with pytest.raises(ValueError, match="num_return_sequences has to be 1"):
        model.generate(IDS, max_new_tokens=3, assistant_model=draft, do_sample=True,
                       num_return_sequences=2)
    with pytest.raises(TypeError, match="assistant_model must be a model"):
        model.generate(IDS, max_new_tokens=3, assistant_model="draft")


@pytest.mark.parametrize("shape", ["dense-mha-untied-bias", "moe-shared"])
def test_several_positions_after_a_cache_as_transformers(tmp_path, shape):
    """The check's forward: T new positions after a cache, on the fused weights
    (``ernie_infer.extend``; it was the graph path), logits equal transformers' forward of
    the whole rows."""
    from skiff.kernels.train.models.ernie_cache import KVCache

    _, ref = make_checkpoint(tmp_path, shape)
    model = from_pretrained(tmp_path)
    ids = np.random.default_rng(4).integers(0, model.config.vocab_size, (2, 11))
    from skiff.kernels.train.core.tensor import no_grad
    from skiff.kernels.train.models import ernie_infer

    cache = KVCache(len(model.model.layers), 16)
    ran = []
    extend = ernie_infer.extend
    ernie_infer.extend = lambda *a, **k: ran.append(1) or extend(*a, **k)
    try:
        with no_grad():  # generate's mode: the fused weights
            model.forward(ids[:, :5], cache)
            got = model.forward(ids[:, 5:], cache).numpy()
    finally:
        ernie_infer.extend = extend
    assert ran == [1]
    assert cache.length == 11
    with torch.no_grad():
        want = ref(torch.tensor(ids)).logits.numpy()[:, 5:]
    np.testing.assert_allclose(got, want, atol=2e-4 * np.abs(want).max())


def test_prompt_lookup_checks_proposals(models):
    """``prompt_lookup_num_tokens`` (round 33: accepted, decoded without it) now proposes
    what followed the last n-gram's earlier occurrence and checks it in one forward: on a
    row that repeats itself the model runs fewer forwards than tokens; the tokens equal
    transformers' prompt-lookup greedy (and plain greedy)."""
    ref, _, model, _ = models
    ids = np.array([[5, 6, 7, 8, 9, 10]])
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), max_new_tokens=30, eos_token_id=None,
                            pad_token_id=0, prompt_lookup_num_tokens=5).numpy()
    calls = []
    forward = model.forward
    model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    try:
        got = model.generate(ids, max_new_tokens=30, eos_token_id=None,
                             prompt_lookup_num_tokens=5)
    finally:
        del model.forward
    np.testing.assert_array_equal(got, want)
    assert 2 <= len(calls) < 30, len(calls)  # the tiny model's greedy text cycles

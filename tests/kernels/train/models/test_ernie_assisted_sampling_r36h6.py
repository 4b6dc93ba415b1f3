"""Assisted decoding beyond one greedy row (round 36, h6). Sampling with
``assistant_model`` decoded without the draft (the model's distribution, not transformers'
draws); now the draft samples and transformers' speculative sampling keeps its tokens
(``_speculative_sampling``; its draft runs the warpers twice), and
``prompt_lookup_num_tokens`` draws at every checked position: with a torch generator the
tokens equal transformers' after ``torch.manual_seed``. A batch was decoded without the
draft; transformers refuses it ("only supported for batch_size = 1"): so does skiff."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

IDS = np.array([[5, 6, 7, 8, 9, 10, 5, 6, 7]])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    a, b = tmp_path_factory.mktemp("main36"), tmp_path_factory.mktemp("draft36")
    _, ref = make_checkpoint(a, "dense-gqa-tied", seed=0)
    _, ref_draft = make_checkpoint(b, "dense-gqa-tied", seed=1)
    return ref, ref_draft, from_pretrained(a), from_pretrained(b)


def _both(models, seed, mine, theirs, **kw):
    ref, _, model, _ = models
    torch.manual_seed(seed)
    with torch.no_grad():
        want = ref.generate(torch.tensor(IDS), pad_token_id=0, eos_token_id=None, **theirs,
                            **kw).numpy()
    calls = []
    forward = model.forward
    model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    try:
        got = model.generate(IDS, eos_token_id=None, generator=torch.Generator().manual_seed(
            seed), **mine, **kw)
    finally:
        del model.forward
    return got, want, len(calls)


@pytest.mark.parametrize("draft", ["other", "self"])
@pytest.mark.parametrize("kw,seed", [
    (dict(do_sample=True), 1),
    (dict(do_sample=True, temperature=0.3, top_k=5), 0),
    (dict(do_sample=True, temperature=0.5, top_p=0.5), 2),
])
def test_speculative_sampling_equals_transformers(models, draft, kw, seed):
    ref, ref_draft, model, small = models
    theirs = ref if draft == "self" else ref_draft
    mine = copy.copy(model) if draft == "self" else small
    got, want, forwards = _both(models, seed, dict(assistant_model=mine),
                                dict(assistant_model=theirs), max_new_tokens=12, **kw)
    np.testing.assert_array_equal(got, want)
    assert draft == "other" or forwards < 8  # several proposals kept in a forward
    plain = model.generate(IDS, max_new_tokens=12, eos_token_id=None,
                           generator=torch.Generator().manual_seed(seed), **kw)
    assert not np.array_equal(plain, got)  # not the plain draws


@pytest.mark.parametrize("kw,seed", [
    (dict(do_sample=True), 2),
    (dict(do_sample=True, temperature=0.3, top_k=5), 1),
])
def test_prompt_lookup_sampling_equals_transformers(models, kw, seed):
    got, want, _ = _both(models, seed, dict(prompt_lookup_num_tokens=3),
                         dict(prompt_lookup_num_tokens=3), max_new_tokens=20, **kw)
    np.testing.assert_array_equal(got, want)


def test_a_batch_is_refused_as_transformers(models):
    ref, ref_draft, model, draft = models
    two = np.repeat(IDS, 2, 0)
    with pytest.raises(ValueError, match="assisted generate is only supported for "
                                         "batch_size = 1"):
        ref.generate(torch.tensor(two), max_new_tokens=3, assistant_model=ref_draft,
                     pad_token_id=0)
    for kw in (dict(assistant_model=draft), dict(prompt_lookup_num_tokens=3),
               dict(assistant_model=draft, do_sample=True)):
        with pytest.raises(ValueError, match="only supported for batch_size = 1 .*got 2 rows"):
            model.generate(two, max_new_tokens=3, **kw)
    # beams ignore the draft (transformers warns), as before
    beams = model.generate(two, max_new_tokens=3, num_beams=2, assistant_model=draft)
    np.testing.assert_array_equal(beams, model.generate(two, max_new_tokens=3, num_beams=2))

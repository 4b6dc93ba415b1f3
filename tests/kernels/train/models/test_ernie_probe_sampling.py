"""Sampling choices resolved as transformers resolves them (round 25 probe): what is not
given comes from the checkpoint's ``generation_config.json``, else transformers' defaults
(``do_sample`` False; when sampling temperature 1, **top-k 50**, top-p 1; ``top_k=0``: no
top-k). Before, ``generate(do_sample=True)`` sampled from the whole vocabulary where
transformers keeps the 50 best, and a checkpoint asking for sampling (ERNIE's ship
``top_p``/``temperature``) was decoded greedily."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch

CASES = [({}, {}), ({}, {"do_sample": True}),
         ({"do_sample": True, "temperature": 0.8, "top_p": 0.8}, {}),
         ({"do_sample": True, "temperature": 0.8, "top_k": 20, "repetition_penalty": 1.1},
          {"top_k": 0, "temperature": 1.5}),
         ({"do_sample": True}, {"do_sample": False})]


@pytest.mark.parametrize("saved,given", CASES)
def test_choices_resolved_as_transformers(tmp_path, saved, given):
    _, ref = make_checkpoint(tmp_path, "dense-gqa-tied")
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **saved}))
    import transformers

    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    theirs, _ = ref._prepare_generation_config(None, **given)
    model = from_pretrained(tmp_path)
    mine = model._sampling(*(given.get(k) for k in ("do_sample", "temperature", "top_k",
                                                      "top_p", "repetition_penalty")))
    assert mine == (theirs.do_sample, theirs.temperature, theirs.top_k, theirs.top_p,
                    theirs.repetition_penalty)


def test_sampled_tokens_stay_in_transformers_top_50(tmp_path):
    """At temperature 5 over 96 tokens nearly every token is likely: each sampled token
    must still be among the 50 best of transformers' logits for its prefix."""
    _, ref = make_checkpoint(tmp_path, "dense-gqa-tied")
    model = from_pretrained(tmp_path)
    assert model.config.vocab_size > 50
    ids = random_ids(model.config.vocab_size, (1, 4), seed=3)
    out = model.generate(ids, max_new_tokens=30, do_sample=True, temperature=5.0, seed=1,
                         eos_token_id=None)
    with torch.no_grad():
        logits = ref(torch.tensor(out[:, :-1])).logits[0].numpy()
    for t in range(ids.shape[1], out.shape[1]):
        best = np.argsort(-logits[t - 1], kind="stable")[:50]
        assert out[0, t] in best, t
    free = model.generate(ids, max_new_tokens=30, do_sample=True, temperature=5.0, seed=1,
                          top_k=0, eos_token_id=None)  # top_k=0: the whole vocabulary
    with torch.no_grad():
        logits = ref(torch.tensor(free[:, :-1])).logits[0].numpy()
    outside = [t for t in range(ids.shape[1], free.shape[1])
               if free[0, t] not in np.argsort(-logits[t - 1], kind="stable")[:50]]
    assert outside  # some token beyond the 50 best: the filter was the default's


def test_checkpoint_that_asks_for_sampling_samples(tmp_path):
    make_checkpoint(tmp_path, "dense-gqa-tied")
    path = tmp_path / "generation_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "do_sample": True,
                                "temperature": 3.0}))
    model = from_pretrained(tmp_path)
    ids = random_ids(model.config.vocab_size, (1, 4), seed=3)
    greedy = model.generate(ids, 12, do_sample=False, eos_token_id=None)
    a = model.generate(ids, 12, seed=4, eos_token_id=None)
    assert not np.array_equal(a, greedy)
    assert np.array_equal(a, model.generate(ids, 12, seed=4, eos_token_id=None))
    rows = model.generate_batch([ids[0], ids[0, :2]], 12, eos_token_id=None)  # greedy
    assert np.array_equal(rows[0], greedy[0])

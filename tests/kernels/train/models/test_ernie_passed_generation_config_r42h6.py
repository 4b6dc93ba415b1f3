"""A ``generation_config`` passed to ``generate`` against the checkpoint's
``generation_config.json`` (round 42, h6): transformers fills from the model's file only
the values the passed config leaves at their defaults, so a passed ``max_new_tokens`` /
``min_new_tokens`` / ``no_repeat_ngram_size`` wins over the file's; skiff took the file's
``max_new_tokens`` (7 new tokens where the passed config said 5), greedy, sampled and beams.
Oracle: transformers' ``generate`` on the same checkpoint folder, the same call."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch, transformers

FILE = {"do_sample": False, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2,
        "eos_token_id": [5, 7], "pad_token_id": 0, "bos_token_id": 1, "max_new_tokens": 7}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("r42h6-gc") / "moe"
    make_checkpoint(folder, "moe-shared")
    (folder / "generation_config.json").write_text(json.dumps(FILE))
    ref = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    return ref, from_pretrained(folder)


G = transformers.GenerationConfig
CASES = {
    "lengths": dict(max_new_tokens=5, repetition_penalty=1.5, eos_token_id=5, pad_token_id=0),
    "min_new": dict(min_new_tokens=6, max_length=14),  # the file's max_new_tokens still wins
    "no_ngram": dict(no_repeat_ngram_size=1, max_new_tokens=9),
    "sampled": dict(max_new_tokens=5, do_sample=True, top_k=7, min_new_tokens=4),
    "beams": dict(max_new_tokens=5, num_beams=3, no_repeat_ngram_size=0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_passed_generation_config_wins_over_the_files(pair, case):
    ref, model = pair
    ids = np.random.default_rng(1).integers(8, 80, (3, 6))
    mask = np.ones_like(ids)
    ids[1, :3], mask[1, :3], ids[2, :1], mask[2, :1] = 0, 0, 0, 0
    kw = CASES[case]
    torch.manual_seed(11)
    want = ref.generate(torch.tensor(ids), attention_mask=torch.tensor(mask),
                        generation_config=G(**kw)).numpy()
    got = model.generate(ids, attention_mask=mask, generation_config=G(**kw),
                         generator=torch.Generator().manual_seed(11))
    np.testing.assert_array_equal(np.asarray(got), want)
    if case == "lengths":
        assert want.shape[1] == 6 + 5  # the passed config's length, not the file's 7


KEYWORDS = {  # round 43 (h6): the call's max_length lost to the file's max_new_tokens only in
    "greedy": dict(max_length=9),  # a passed config; as keywords skiff took max_length
    "beams": dict(max_length=9, num_beams=2),
}


@pytest.mark.parametrize("case", list(KEYWORDS))
def test_a_max_length_keyword_loses_to_the_files_max_new_tokens(pair, case):
    ref, model = pair
    ids = np.random.default_rng(5).integers(8, 80, (1, 5))  # no eos within 7 tokens
    kw = KEYWORDS[case]
    want = ref.generate(torch.tensor(ids), **kw).numpy()
    assert want.shape[1] == 5 + FILE["max_new_tokens"]  # transformers: the file's 7, not 4
    np.testing.assert_array_equal(np.asarray(model.generate(ids, **kw)), want)

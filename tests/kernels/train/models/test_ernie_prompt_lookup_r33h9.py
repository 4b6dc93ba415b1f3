"""``generate(..., prompt_lookup_num_tokens=N)`` (transformers' prompt-lookup decoding, a
speed-up; round 33: was "skiff's generate does not support prompt_lookup_num_tokens"):
accepted, and the greedy tokens are transformers' with the same option (which are those of
plain greedy decoding), with penalties and eos lists too."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lookup")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("kw", [dict(), dict(repetition_penalty=1.2, no_repeat_ngram_size=3),
                                dict(eos_token_id=[5, 9], max_matching_ngram_size=2)])
def test_prompt_lookup_greedy_as_transformers(pair, kw):
    ref, model = pair
    ids = np.random.default_rng(1).integers(3, 60, (1, 12))
    ids[0, 6:] = ids[0, :6]  # a repeated prompt: candidates to look up
    kw = dict(kw)
    kw.setdefault("eos_token_id", None)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), max_new_tokens=20, do_sample=False,
                            prompt_lookup_num_tokens=4, **kw).numpy()
    got = model.generate(ids, max_new_tokens=20, do_sample=False, prompt_lookup_num_tokens=4,
                         **kw)
    np.testing.assert_array_equal(got, want)

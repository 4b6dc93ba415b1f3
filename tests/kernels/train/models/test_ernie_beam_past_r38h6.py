"""Beam search on a second chat turn's cache (round 38, h6; refused before: "past_key_values
with num_beams > 1 is not supported"). transformers runs ``generate(num_beams=N,
past_key_values=turn1)`` once the user has expanded the cache to the beams
(``cache.batch_repeat_interleave(N)``; unexpanded it fails on the sizes); its tokens are
those of beams without a cache. skiff runs the whole sequence again (the cache is a
speed-up): the same tokens as transformers', one prompt and a left-padded batch whose
second turn leaves a hole of padding, dense and MoE."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp("beampast38"), request.param)
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("kw", [dict(num_beams=3), dict(num_beams=2, num_return_sequences=2,
                                                        length_penalty=0.5)])
def test_beams_on_a_second_turn_cache_as_transformers(pair, kw):
    ref, model = pair
    ids = torch.tensor([[0, 0, 5, 6, 7, 8, 9], [11, 12, 13, 14, 15, 16, 17]])
    mask = (ids != 0).long()
    with torch.no_grad():
        first = ref.generate(input_ids=ids, attention_mask=mask, max_new_tokens=3,
                             pad_token_id=0, return_dict_in_generate=True)
    mine = model.generate(input_ids=ids.numpy(), attention_mask=mask.numpy(),
                          max_new_tokens=3, return_dict_in_generate=True)
    turn = torch.tensor([[0, 30], [31, 32]])  # the second turn left-padded: a hole
    ids2 = torch.cat([first.sequences, turn], 1)
    mask2 = torch.cat([mask, torch.ones(2, 3, dtype=torch.long), (turn != 0).long()], 1)
    cache = copy.deepcopy(first.past_key_values)
    cache.batch_repeat_interleave(kw["num_beams"])
    with torch.no_grad():
        want = ref.generate(input_ids=ids2, attention_mask=mask2, past_key_values=cache,
                            max_new_tokens=5, pad_token_id=0, **kw).numpy()
    got = model.generate(input_ids=ids2.numpy(), attention_mask=mask2.numpy(),
                         past_key_values=mine.past_key_values, max_new_tokens=5,
                         pad_token_id=0, **kw)
    np.testing.assert_array_equal(np.asarray(got), want)

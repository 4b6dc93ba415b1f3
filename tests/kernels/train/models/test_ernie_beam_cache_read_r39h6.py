"""Beam search on a second turn's cache reads the cache (round 39, h6; round 38 ran the
whole sequence again): transformers' ``generate(num_beams=N, past_key_values=cache)`` on a
cache its user expanded (``batch_repeat_interleave(N)``) runs only the columns after it;
skiff does the same (``ernie_beam_cache.prefill_past``), from an expanded cache or one row
per prompt. Shown on a *foreign* cache (turn 1 of other prompts): what the cache holds
decides the tokens, so recomputing the prompt gives others. Tokens and scores against
transformers 5 on a left-padded batch with a hole, dense and MoE; and classifier-free
guidance with beams (refused in round 38), which transformers runs: its unconditional run
feeds each of the B * N rows its newest token, never reordered with the beams."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

A = torch.tensor([[0, 0, 5, 6, 7, 8, 9], [11, 12, 13, 14, 15, 16, 17]])
B = torch.tensor([[0, 0, 25, 26, 27, 28, 29], [41, 42, 43, 44, 45, 46, 47]])
MASK = (A != 0).long()


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp("beamread39"), request.param)
    return ref, from_pretrained(folder)


def _turn1(ref, model):
    with torch.no_grad():
        first = ref.generate(input_ids=A, attention_mask=MASK, max_new_tokens=3,
                             pad_token_id=0, return_dict_in_generate=True)
    mine = model.generate(input_ids=A.numpy(), attention_mask=MASK.numpy(), max_new_tokens=3,
                          return_dict_in_generate=True)
    np.testing.assert_array_equal(np.asarray(mine.sequences), first.sequences.numpy())
    return first.past_key_values, mine.past_key_values


@pytest.mark.parametrize("nb, extra", [(3, {}), (2, dict(num_return_sequences=2,
                                                         length_penalty=0.5))])
def test_beams_read_a_foreign_cache_as_transformers(pair, nb, extra):
    ref, model = pair
    theirs, mine = _turn1(ref, model)
    # turn 2 on other prompts' columns: the cache (of A) is what both read for them
    ids2 = torch.cat([B, torch.tensor([[50, 51, 52], [53, 54, 55]]),
                      torch.tensor([[0, 30], [31, 32]])], 1)  # the second turn: a hole
    mask2 = torch.cat([MASK, torch.ones(2, 3, dtype=torch.long), (ids2[:, -2:] != 0).long()],
                      1)
    cache = copy.deepcopy(theirs)
    cache.batch_repeat_interleave(nb)
    kw = dict(max_new_tokens=5, pad_token_id=0, num_beams=nb, **extra)
    with torch.no_grad():
        want = ref.generate(input_ids=ids2, attention_mask=mask2, past_key_values=cache,
                            return_dict_in_generate=True, output_scores=True, **kw)
        fresh = ref.generate(input_ids=ids2, attention_mask=mask2, **kw).numpy()
    assert not np.array_equal(want.sequences.numpy(), fresh)  # the cache decides
    held = mine.length
    expanded = copy.deepcopy(mine)
    expanded.batch_repeat_interleave(nb)
    dynamic = copy.deepcopy(theirs)  # transformers' own cache, expanded, read by skiff
    dynamic.batch_repeat_interleave(nb)
    for past in (mine, expanded, dynamic):  # one row per prompt, or expanded rows
        got = model.generate(input_ids=ids2.numpy(), attention_mask=mask2.numpy(),
                             past_key_values=past, return_dict_in_generate=True,
                             output_scores=True, **kw)
        np.testing.assert_array_equal(np.asarray(got.sequences), want.sequences.numpy())
        np.testing.assert_allclose(np.asarray(got.sequences_scores),
                                   want.sequences_scores.numpy(), atol=1e-4)
        mine_s = np.stack([np.asarray(s) for s in got.scores])
        theirs_s = torch.stack(want.scores).numpy()
        ok = theirs_s > -1e8
        assert (ok == (mine_s > -1e8)).all()
        np.testing.assert_allclose(mine_s[ok], theirs_s[ok], atol=1e-4)
    assert mine.length == held and mine.batch_size == 2  # the user's cache as it was
    with pytest.raises(ValueError, match="one row per prompt"):
        model.generate(input_ids=ids2.numpy(), attention_mask=mask2.numpy(),
                       past_key_values=expanded, max_new_tokens=2, num_beams=nb + 1)


@pytest.mark.parametrize("kw", [dict(num_beams=3, guidance_scale=1.5),
                                dict(num_beams=2, guidance_scale=2.0, num_return_sequences=2,
                                     repetition_penalty=1.2),
                                dict(num_beams=2, guidance_scale=1.5, do_sample=True, top_k=10)])
def test_guidance_with_beams_as_transformers(pair, kw):
    ref, model = pair
    draws = dict(generator=torch.Generator().manual_seed(0)) if kw.get("do_sample") else {}
    torch.manual_seed(0)  # beam sampling: transformers' own draws, which skiff takes
    with torch.no_grad():
        want = ref.generate(input_ids=A, attention_mask=MASK, max_new_tokens=6,
                            pad_token_id=0, return_dict_in_generate=True, output_scores=True,
                            **kw)
        plain = ref.generate(input_ids=A, attention_mask=MASK, max_new_tokens=6,
                             pad_token_id=0, **{k: v for k, v in kw.items()
                                                if k != "guidance_scale"}).numpy()
    assert not np.array_equal(plain, want.sequences.numpy())  # the guidance changed them
    got = model.generate(input_ids=A.numpy(), attention_mask=MASK.numpy(), max_new_tokens=6,
                         pad_token_id=0, return_dict_in_generate=True, output_scores=True,
                         **kw, **draws)
    np.testing.assert_array_equal(np.asarray(got.sequences), want.sequences.numpy())
    mine_s = np.stack([np.asarray(s) for s in got.scores])
    theirs_s = torch.stack(want.scores).numpy()
    ok = np.isfinite(theirs_s) & (theirs_s > -1e8)
    np.testing.assert_allclose(mine_s[ok], theirs_s[ok], atol=1e-4)
    with pytest.raises(ValueError, match="negative_prompt_ids with beam search"):
        model.generate(input_ids=A.numpy(), attention_mask=MASK.numpy(), max_new_tokens=2,
                       negative_prompt_ids=np.array([[3, 4], [5, 6]]), **kw)

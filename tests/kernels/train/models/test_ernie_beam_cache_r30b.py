"""``generate(num_beams=N, return_dict_in_generate=True).past_key_values`` (round 30b; it was
None): transformers' cache after the last step, one row per running beam in its order, the
prompt's padding columns included and the last generated token not fed; keys and values on
the real positions equal transformers', left-padded prompts, an eos that finishes beams
early, beam sampling's shape, dense and MoE."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder)


def same_cache(mine, theirs, real):
    assert mine.get_seq_length() == theirs.get_seq_length()
    for (k, v), layer in zip(mine, theirs.layers):
        for a, b in ((k, layer.keys), (v, layer.values)):
            b = b.numpy().transpose(0, 2, 1, 3)
            assert np.asarray(a).shape == layer.keys.shape
            np.testing.assert_allclose(np.asarray(a).transpose(0, 2, 1, 3)[real], b[real],
                                       atol=1e-5 * np.abs(b).max())


@pytest.mark.parametrize("eos", [None, "early"])
def test_beam_cache_equals_transformers(pair, eos):
    ref, model = pair
    ids = random_ids(model.config.vocab_size, (2, 6), seed=4)
    mask = np.ones_like(ids)
    ids[0, :2], mask[0, :2] = 0, 0  # row 0 left-padded
    kw = dict(num_beams=3, max_new_tokens=5, do_sample=False, pad_token_id=0,
              return_dict_in_generate=True, num_return_sequences=2)
    if eos:  # a token the beams meet early: some hypotheses finish before the end
        probe = model.generate(ids, attention_mask=mask, **{**kw, "eos_token_id": None})
        kw["eos_token_id"] = int(np.asarray(probe.sequences)[0, ids.shape[1] + 1])
    else:
        kw["eos_token_id"] = None
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), attention_mask=torch.tensor(mask), **kw)
    got = model.generate(ids, attention_mask=mask, **kw)
    np.testing.assert_array_equal(np.asarray(got.sequences), want.sequences.numpy())
    S = want.past_key_values.get_seq_length()
    grown = np.concatenate([mask, np.ones((2, S - ids.shape[1]), np.int64)], 1)
    same_cache(got.past_key_values, want.past_key_values,
               np.repeat(grown, 3, axis=0).astype(bool))


def test_beam_sampling_returns_a_cache(pair):
    _, model = pair
    ids = random_ids(model.config.vocab_size, (1, 4), seed=6)
    out = model.generate(ids, num_beams=2, max_new_tokens=3, do_sample=True, seed=0,
                         eos_token_id=None, return_dict_in_generate=True)
    cache = out.past_key_values
    assert cache.get_seq_length() == 4 + 3 - 1 and np.asarray(cache[0][0]).shape[0] == 2
    # each row is the cache of its running beam's tokens: the same keys as a plain forward
    for r in range(2):
        beam = cache[0][0][r]  # layer 0 keys (K, S, D)
        fresh = model(np.asarray(out.sequences)[:1, :4], use_cache=True).past_key_values
        np.testing.assert_allclose(np.asarray(beam)[:, :4], np.asarray(fresh[0][0][0]),
                                   atol=1e-5)

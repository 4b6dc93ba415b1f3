"""A key/value cache with a padded batch (round 30; was "past_key_values with a padded
attention_mask is not supported"): batched multi-turn chat as a transformers user runs it.
A left-padded forward's cache continued under the whole mask (logits 1e-5, the cached keys
and values on real positions), ``position_ids`` given; a padded ``generate`` returning its
cache and a second turn appended (the new turn left-padded in the middle: padding between
tokens), greedy and sampled with a seeded torch generator, rows that stop at an eos early;
each against transformers' ``generate`` with its own cache, and each row against that row
generated alone; transformers' ``DynamicCache`` of a padded batch continued by skiff."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

SHAPES = ["dense-gqa-tied", "moe-shared"]
PAD = 0


@pytest.fixture(scope="module", params=SHAPES)
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder)


def left_padded(vocab, lengths, seed):
    """(ids, mask) of rows of ``lengths`` real tokens, left-padded with PAD."""
    rng = np.random.default_rng(seed)
    width = max(lengths)
    ids = np.full((len(lengths), width), PAD, np.int64)
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        ids[b, width - n:] = rng.integers(3, vocab, n)
        mask[b, width - n:] = 1
    return ids, mask


def close(got, want, real=None):
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    got = np.asarray(got)
    if real is not None:
        got, want = got[real], want[real]
    np.testing.assert_allclose(got, want, atol=1e-5 * max(1, np.abs(want).max()))


def t(a):
    return torch.tensor(np.asarray(a))


def test_forward_padded_cache_continued(pair):
    ref, model = pair
    V = model.config.vocab_size
    ids, mask = left_padded(V, [3, 6, 4], seed=1)
    new = np.random.default_rng(2).integers(3, V, (3, 2))
    whole = np.concatenate([mask, np.ones_like(new)], 1)
    with torch.no_grad():
        r = ref(t(ids), attention_mask=t(mask), use_cache=True)
        r2 = ref(t(new), attention_mask=t(whole), past_key_values=r.past_key_values)
    out = model(ids, attention_mask=mask, use_cache=True)
    real = mask.astype(bool)
    close(out.numpy(), r.logits, real)
    cache = out.past_key_values
    assert cache.get_seq_length() == ids.shape[1]
    W = ids.shape[1]  # transformers' cache has grown by r2 in place: its first W positions
    for (k, v), layer in zip(cache, r.past_key_values.layers):  # the real positions
        close(k.transpose(0, 2, 1, 3), layer.keys[:, :, :W].transpose(1, 2), real)
        close(v.transpose(0, 2, 1, 3), layer.values[:, :, :W].transpose(1, 2), real)
    got = model(new, attention_mask=whole, past_key_values=cache)
    close(got.numpy(), r2.logits)
    assert got.past_key_values is cache and cache.get_seq_length() == whole.shape[1]
    # position_ids as generate makes them (each row from 0), on a fresh cache
    pos = np.maximum(np.cumsum(mask, 1) - 1, 0)
    with torch.no_grad():
        r3 = ref(t(ids), attention_mask=t(mask), position_ids=t(pos), use_cache=True)
    got3 = model(ids, attention_mask=mask, position_ids=pos, past_key_values=None,
                 use_cache=True)
    close(got3.numpy(), r3.logits, real)


def two_turns(model, ids, mask, turn_lengths, seed, **kw):
    """transformers' batched second turn: the first turn's sequences, then each row's new
    message left-padded (padding between the turns), the mask of both."""
    first = model.generate(ids, attention_mask=mask, return_dict_in_generate=True, **kw)
    seqs = np.asarray(first.sequences)
    turn, turn_mask = left_padded(model.config.vocab_size, turn_lengths, seed)
    grown = np.concatenate([mask, np.ones((len(ids), seqs.shape[1] - ids.shape[1]),
                                          np.int64)], 1)
    return first, np.concatenate([seqs, turn], 1), np.concatenate([grown, turn_mask], 1)


@pytest.mark.parametrize("sample", [False, True])
def test_generate_second_turn_with_the_cache(pair, sample):
    ref, model = pair
    ids, mask = left_padded(model.config.vocab_size, [2, 6, 4], seed=3)
    kw = dict(max_new_tokens=4, do_sample=False, pad_token_id=PAD)
    mine, ids2, mask2 = two_turns(model, ids, mask, [3, 1, 2], seed=4, **kw)
    want = ref.generate(t(ids), attention_mask=t(mask), return_dict_in_generate=True, **kw)
    np.testing.assert_array_equal(np.asarray(mine.sequences), want.sequences.numpy())
    assert mine.past_key_values.get_seq_length() == want.past_key_values.get_seq_length()
    more = dict(max_new_tokens=5, pad_token_id=PAD, do_sample=sample)
    if sample:
        more.update(top_k=20, temperature=0.8)
        torch.manual_seed(7)
    want2 = ref.generate(t(ids2), attention_mask=t(mask2), **more,
                         past_key_values=copy.deepcopy(want.past_key_values))
    got = model.generate(ids2, attention_mask=mask2, **more,
                         past_key_values=copy.deepcopy(mine.past_key_values),
                         generator=torch.Generator().manual_seed(7) if sample else None)
    np.testing.assert_array_equal(np.asarray(got), want2.numpy())
    # without the cache (padding between the turns): the same; transformers' from its own
    # DynamicCache of the padded first turn: the same
    np.testing.assert_array_equal(
        np.asarray(model.generate(ids2, attention_mask=mask2, **more,
                                  generator=torch.Generator().manual_seed(7)
                                  if sample else None)), want2.numpy())
    np.testing.assert_array_equal(
        np.asarray(model.generate(ids2, attention_mask=mask2, **more,
                                  past_key_values=copy.deepcopy(want.past_key_values),
                                  generator=torch.Generator().manual_seed(7)
                                  if sample else None)), want2.numpy())
    if not sample:  # each row's answer is that of the row alone
        for b in range(len(ids2)):
            alone = model.generate(ids2[b:b + 1, mask2[b] == 1], max_new_tokens=5,
                                   do_sample=False, pad_token_id=PAD)
            np.testing.assert_array_equal(np.asarray(alone)[0, -5:], np.asarray(got)[b, -5:])


def test_rows_stop_early_then_continue(pair):
    """An eos met by some rows in the first turn (transformers pads after it under mask 1)
    and the cache continued."""
    ref, model = pair
    ids, mask = left_padded(model.config.vocab_size, [5, 2, 3], seed=5)
    probe = np.asarray(model.generate(ids, attention_mask=mask, max_new_tokens=6,
                                      do_sample=False, pad_token_id=PAD))
    eos = int(probe[0, ids.shape[1] + 1])  # row 0 stops after its second token
    kw = dict(max_new_tokens=6, do_sample=False, pad_token_id=PAD, eos_token_id=eos)
    mine, ids2, mask2 = two_turns(model, ids, mask, [2, 3, 1], seed=6, **kw)
    want = ref.generate(t(ids), attention_mask=t(mask), return_dict_in_generate=True, **kw)
    np.testing.assert_array_equal(np.asarray(mine.sequences), want.sequences.numpy())
    want2 = ref.generate(t(ids2), attention_mask=t(mask2), max_new_tokens=4,
                         do_sample=False, pad_token_id=PAD,
                         past_key_values=copy.deepcopy(want.past_key_values))
    got = model.generate(ids2, attention_mask=mask2, max_new_tokens=4, do_sample=False,
                         pad_token_id=PAD, past_key_values=mine.past_key_values)
    np.testing.assert_array_equal(np.asarray(got), want2.numpy())


def test_mask_must_cover_the_cache(pair):
    _, model = pair
    ids, mask = left_padded(model.config.vocab_size, [2, 4], seed=8)
    cache = model(ids, attention_mask=mask, use_cache=True).past_key_values
    with pytest.raises(ValueError, match="the cached and the new positions"):
        model(ids[:, -1:], attention_mask=mask[:, -1:], past_key_values=cache)


def test_empty_transformers_cache_filled_by_a_padded_generate(pair):
    """``generate(**padded, past_key_values=DynamicCache())``: transformers' tokens, and the
    DynamicCache holds transformers' keys/values on the real positions afterwards."""
    ref, model = pair
    transformers = pytest.importorskip("transformers")
    ids, mask = left_padded(model.config.vocab_size, [3, 6, 4], seed=9)
    kw = dict(attention_mask=mask, max_new_tokens=4, do_sample=False, pad_token_id=PAD)
    theirs, mine = (transformers.DynamicCache(config=ref.config) for _ in range(2))
    want = ref.generate(t(ids), **{**kw, "attention_mask": t(mask)}, past_key_values=theirs)
    got = model.generate(ids, **kw, past_key_values=mine)
    np.testing.assert_array_equal(np.asarray(got), want.numpy())
    assert mine.get_seq_length() == theirs.get_seq_length() == ids.shape[1] + 3
    real = np.concatenate([mask, np.ones((len(ids), 3), np.int64)], 1).astype(bool)
    for a, b in zip(mine.layers, theirs.layers):
        close(a.keys.numpy().transpose(0, 2, 1, 3), b.keys.numpy().transpose(0, 2, 1, 3), real)
        close(a.values.numpy().transpose(0, 2, 1, 3), b.values.numpy().transpose(0, 2, 1, 3),
              real)

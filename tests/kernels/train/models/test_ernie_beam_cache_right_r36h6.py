"""A right-padded beam search's returned cache (round 36, h6). skiff generates a
right-padded row after its real tokens (the tokens transformers gives the row left-padded);
the cache it returns holds the prompt at its columns, the padding columns unseen, the
generated tokens after. Picked per prompt with transformers' ``batch_select_indices`` (was
missing: ``PastKeyValues`` had no row selection) and continued under the mask of the
returned sequences (the right padding now a hole), it gives transformers' tokens from its
own left-padded beam search's cache, picked and continued the same way."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

RIGHT = np.array([[5, 6, 7, 9, 0, 0], [8, 9, 10, 11, 12, 13]])
LEFT = np.array([[0, 0, 5, 6, 7, 9], [8, 9, 10, 11, 12, 13]])
KW = dict(max_new_tokens=4, num_beams=2, return_dict_in_generate=True, pad_token_id=0,
          eos_token_id=None)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("beamright36")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    return ref, from_pretrained(folder)


@pytest.fixture(scope="module")
def runs(pair):
    ref, model = pair
    got = model.generate(RIGHT, attention_mask=(RIGHT != 0).astype(np.int64), **KW)
    with torch.no_grad():
        want = ref.generate(torch.tensor(LEFT), attention_mask=torch.tensor(LEFT != 0).long(),
                            **KW)
    return got, want


def _layers(cache):
    return [(layer.keys, layer.values) for layer in cache.layers]


def _mask(prompt, seq):
    return np.concatenate([(prompt != 0).astype(np.int64),
                           np.ones((len(prompt), seq.shape[1] - prompt.shape[1]), np.int64)], 1)


def test_keys_on_real_positions_equal_transformers(runs):
    got, want = runs
    pk, tk = got.past_key_values, want.past_key_values
    assert pk.get_seq_length() == tk.get_seq_length() == got.sequences.shape[1] - 1
    for (k, v), (tk_, tv) in zip(pk, _layers(tk)):
        for r, (mine, theirs) in enumerate([(np.r_[0:4, 6:9], np.r_[2:9])] * 2 +
                                           [(np.r_[0:9], np.r_[0:9])] * 2):
            np.testing.assert_allclose(k[r][:, mine], tk_[r][:, theirs].numpy(), atol=2e-5)
            np.testing.assert_allclose(v[r][:, mine], tv[r][:, theirs].numpy(), atol=2e-5)


def test_best_beams_continued_equal_transformers(pair, runs):
    ref, model = pair
    got, want = runs
    seq = np.asarray(got.sequences)
    np.testing.assert_array_equal(seq[:, 6:], want.sequences[:, 6:].numpy())
    pk, tk = copy.deepcopy(got.past_key_values), copy.deepcopy(want.past_key_values)
    assert pk.batch_size == 4
    pk.batch_select_indices([0, 2])  # each prompt's best beam
    tk.batch_select_indices(torch.tensor([0, 2]))
    mine = model.generate(seq, attention_mask=_mask(RIGHT, seq), past_key_values=pk,
                          max_new_tokens=3, pad_token_id=0, eos_token_id=None)
    lseq = want.sequences
    with torch.no_grad():
        theirs = ref.generate(lseq, attention_mask=torch.tensor(_mask(LEFT, lseq.numpy())),
                              cache=tk, max_new_tokens=3, pad_token_id=0, eos_token_id=None)
    np.testing.assert_array_equal(mine[:, 6:], theirs[:, 6:].numpy())


def test_row_methods_equal_dynamic_cache(runs):
    """``reorder_cache`` and ``batch_repeat_interleave`` as transformers' cache methods."""
    got, want = runs
    pk, tk = copy.deepcopy(got.past_key_values), copy.deepcopy(want.past_key_values)
    order = [3, 1, 0, 2]
    pk.reorder_cache(np.array(order))
    tk.reorder_cache(torch.tensor(order))
    pk.batch_repeat_interleave(2)
    tk.batch_repeat_interleave(2)
    assert pk.batch_size == 8
    for (k, _), (tk_, _) in zip(pk, _layers(tk)):  # the rows on the generated columns
        np.testing.assert_allclose(k[:, :, 6:], tk_[:, :, 6:].numpy(), atol=2e-5)
    with pytest.raises(IndexError, match="out of the cache's 8 rows"):
        pk.batch_select_indices([8])

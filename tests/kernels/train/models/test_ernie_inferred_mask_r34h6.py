"""A padded batch passed without its ``attention_mask`` (round 34, h6): transformers infers
the mask from the pad id (``_prepare_attention_mask_for_generation``: where the ids hold
``pad_token_id``, unless it is an eos id); skiff attended to the pads and gave other tokens
(greedy, sampled and beams). Now masked the same way: the tokens equal transformers'."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

IDS = np.array([[0, 0, 5, 6, 7], [8, 9, 10, 11, 12]])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mask34")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("kw", [
    dict(pad_token_id=0, eos_token_id=None),
    dict(pad_token_id=0, eos_token_id=None, do_sample=True, top_k=10),
    dict(pad_token_id=0, eos_token_id=None, num_beams=2),
    dict(pad_token_id=0, eos_token_id=0),  # pad = eos: not inferred (transformers warns)
    dict(eos_token_id=None),  # the checkpoint's pad id (0)
])
def test_pads_masked_as_transformers(pair, kw):
    ref, model = pair
    torch.manual_seed(0)
    with torch.no_grad():
        want = ref.generate(torch.tensor(IDS), max_new_tokens=5, **kw).numpy()
    got = model.generate(IDS, max_new_tokens=5, generator=torch.Generator().manual_seed(0),
                         **kw)
    np.testing.assert_array_equal(got, want)


def test_the_mask_matters_here(pair):
    """Not vacuous: with the pads attended (a mask of ones) the tokens differ."""
    _, model = pair
    ones = model.generate(IDS, max_new_tokens=5, pad_token_id=0, eos_token_id=None,
                          attention_mask=np.ones_like(IDS))
    inferred = model.generate(IDS, max_new_tokens=5, pad_token_id=0, eos_token_id=None)
    assert not np.array_equal(ones, inferred)


def test_a_pad_id_inside_a_row_is_masked(pair):
    """transformers masks such a hole out (round 35 matches it: ``test_ernie_mask_holes_
    r35h6``; it was a warning here)."""
    ref, model = pair
    ids = np.array([[5, 0, 6]])
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids), max_new_tokens=2, pad_token_id=0,
                            eos_token_id=None).numpy()
    got = model.generate(ids, max_new_tokens=2, pad_token_id=0, eos_token_id=None)
    np.testing.assert_array_equal(got, want)

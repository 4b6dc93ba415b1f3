"""A right-padded batch in ``generate`` (round 35, h11): transformers warns "A decoder-only
architecture is being used, but right-padding was detected!" and still generates: the first
new token of a right-padded row is read at the last column (a pad query that sees the row's
real tokens, at position 0), the new tokens follow the pads at ``cumsum(mask) - 1``. skiff
generated after each row's real tokens (other first tokens than transformers', silently).
Now the same tokens, scores and warning as transformers, mask passed or inferred from the
pad id, dense and MoE."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

IDS = np.array([[5, 6, 7, 9, 3, 4], [8, 9, 10, 0, 0, 0], [11, 12, 13, 14, 0, 0]])
MASK = (IDS != 0).astype(np.int64)
BASE = dict(pad_token_id=0, eos_token_id=None)
WARNING = "A decoder-only architecture is being used, but right-padding was detected!"


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("rightpad35")
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


def _both(pair, explicit, **kw):
    ref, model = pair
    given = dict(attention_mask=MASK) if explicit else {}
    torch.manual_seed(0)
    with torch.no_grad():
        want = ref.generate(torch.tensor(IDS), max_new_tokens=6, **BASE, **kw,
                            **{k: torch.tensor(v) for k, v in given.items()})
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        got = model.generate(IDS, max_new_tokens=6, generator=torch.Generator().manual_seed(0),
                             **BASE, **kw, **given)
    assert [str(w.message) for w in said if WARNING in str(w.message)], \
        [str(w.message) for w in said]
    return got, want


@pytest.mark.parametrize("explicit", [False, True], ids=["inferred", "mask"])
@pytest.mark.parametrize("kw", [
    dict(),
    dict(do_sample=True, top_k=10),
    dict(repetition_penalty=1.3, no_repeat_ngram_size=2),
    dict(use_cache=False),
], ids=["greedy", "sampled", "penalties", "nocache"])
def test_tokens_equal_transformers(pair, explicit, kw):
    got, want = _both(pair, explicit, **kw)
    np.testing.assert_array_equal(got, want.numpy())


def test_scores_equal_and_not_the_left_padded_tokens(pair):
    got, want = _both(pair, True, return_dict_in_generate=True, output_scores=True)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    for mine, theirs in zip(got.scores, want.scores):
        np.testing.assert_allclose(np.asarray(mine), theirs.numpy(), atol=2e-4, rtol=1e-4)
    # not vacuous: the same prompts left-padded give other first tokens for the padded rows
    # (what skiff generated before for the right-padded batch)
    ref, _ = pair
    left = np.array([np.roll(r, len(r) - int(m.sum())) for r, m in zip(IDS, MASK)])
    with torch.no_grad():
        plain = ref.generate(torch.tensor(left), attention_mask=torch.tensor(left != 0),
                             max_new_tokens=6, **BASE).numpy()
    assert not np.array_equal(plain[1:, 6], want.sequences.numpy()[1:, 6])


def test_left_padding_says_nothing(pair):
    _, model = pair
    left = np.array([[0, 0, 8, 9, 10], [5, 6, 7, 9, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.generate(left, attention_mask=(left != 0).astype(np.int64), max_new_tokens=2,
                       **BASE)

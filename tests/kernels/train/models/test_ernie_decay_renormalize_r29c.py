"""``exponential_decay_length_penalty`` and ``renormalize_logits`` (round 29c; both were "not
supported" errors): greedy and sampled tokens, and the scores, against transformers'
``generate`` on the same checkpoint, one row and a left-padded batch."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("decay-" + request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


def _prompt(padded):
    ids = np.random.default_rng(3).integers(3, 60, (3, 6))
    mask = np.ones_like(ids)
    if padded:
        ids[1, :3], mask[1, :3], ids[2, :1], mask[2, :1] = 0, 0, 0, 0
    return ids, mask


def _eos(ref, ids, mask):
    """An eos id no row emits on its own within 12 greedy tokens (so only the penalty
    brings it), chosen among the tokens transformers scores highest at the end."""
    with torch.no_grad():
        free = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            max_new_tokens=12, do_sample=False, eos_token_id=None,
                            output_scores=True, return_dict_in_generate=True)
    seen = set(free.sequences.numpy().reshape(-1).tolist())
    order = torch.argsort(free.scores[-1][0], descending=True).tolist()
    return next(t for t in order if t not in seen)


def _check(got, want):
    np.testing.assert_array_equal(np.asarray(got.sequences), want.sequences.numpy())
    assert len(got.scores) == len(want.scores)
    for mine, theirs in zip(got.scores, want.scores):
        live = ~np.isnan(mine).all(axis=1)  # skiff's finished rows are NaN (they left the
        assert live.any()                   # packed batch); transformers' are computed
        mine, theirs = np.asarray(mine)[live], theirs.numpy()[live]
        fin = np.isfinite(theirs)
        np.testing.assert_array_equal(np.isfinite(mine), fin)
        np.testing.assert_allclose(np.asarray(mine)[fin], theirs[fin], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("kw", [dict(exponential_decay_length_penalty=(2, 3.0)),
                                dict(renormalize_logits=True),
                                dict(exponential_decay_length_penalty=(1, 2.0),
                                     renormalize_logits=True, min_new_tokens=3)])
def test_greedy_equals_transformers(pair, padded, kw):
    ref, model = pair
    ids, mask = _prompt(padded)
    eos = _eos(ref, ids, mask)
    kw = dict(kw, max_new_tokens=12, do_sample=False, eos_token_id=eos, pad_token_id=0,
              output_scores=True, return_dict_in_generate=True)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **kw)
    got = model.generate(ids, attention_mask=mask if padded else None, **kw)
    _check(got, want)
    if "exponential_decay_length_penalty" in kw:  # the penalty ended some rows early
        assert (want.sequences.numpy()[:, ids.shape[1]:] == eos).any()


@pytest.mark.parametrize("padded", [False, True])
def test_sampling_equals_transformers(pair, padded):
    ref, model = pair
    ids, mask = _prompt(padded)
    eos = _eos(ref, ids, mask)
    kw = dict(max_new_tokens=10, do_sample=True, top_k=10, temperature=0.9, eos_token_id=eos,
              pad_token_id=0, exponential_decay_length_penalty=(2, 2.5),
              renormalize_logits=True, output_scores=True, return_dict_in_generate=True)
    torch.manual_seed(11)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **kw)
    got = model.generate(ids, attention_mask=mask if padded else None,
                         generator=torch.Generator().manual_seed(11), **kw)
    _check(got, want)


def test_bad_decay_is_one_clear_error(pair):
    _, model = pair
    with pytest.raises(ValueError, match=r"\(start, factor\)"):
        model.generate(np.array([[5, 6, 7]]), max_new_tokens=2, eos_token_id=3,
                       exponential_decay_length_penalty=1.5)

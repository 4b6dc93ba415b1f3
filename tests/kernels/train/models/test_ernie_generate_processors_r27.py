"""transformers' ``generate`` options ``sequence_bias``, ``bad_words_ids``,
``forced_eos_token_id``, ``suppress_tokens``, ``begin_suppress_tokens`` and the
``min_p`` / ``typical_p`` / ``epsilon_cutoff`` / ``eta_cutoff`` warpers (round 27; each
was "skiff's generate does not support ..."), compared with transformers' ``generate`` on
the same tiny checkpoints: the same sequences and processed scores, greedy (one row, a
left-padded batch) and sampling (transformers' draws through a torch generator); refused
with beams."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.ernie_generate_processors import ExtraProcessors

from .ernie_reference import make_checkpoint, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("procs-" + request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


def _batch(padded):
    ids = np.random.default_rng(1).integers(3, 60, (2, 5))
    mask = np.ones_like(ids)
    if padded:
        ids[1, :2], mask[1, :2] = 0, 0
    return ids, mask


def _free(ref, ids, mask, n=8):
    with torch.no_grad():
        return ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            max_new_tokens=n, do_sample=False, eos_token_id=None).numpy()


def _cases(free, T):
    """Options built from the free run's tokens, so that each one changes the result."""
    a, b, c = (int(free[0, T + i]) for i in range(3))
    d = int(free[1, T + 1])
    return [
        dict(sequence_bias={(a,): -5.0, (a, b): 3.0, (d,): 2.5}),
        dict(sequence_bias=[[[b], -4.0]], bad_words_ids=[[c], [a, b]]),
        dict(bad_words_ids=[[a], [d]], eos_token_id=[a]),   # an eos is not a bad word
        dict(suppress_tokens=[a, d], begin_suppress_tokens=[b]),
        dict(forced_eos_token_id=c, eos_token_id=[c]),
        dict(begin_suppress_tokens=[a, int(free[1, T])], no_repeat_ngram_size=2,
             repetition_penalty=1.3),
    ]


@pytest.mark.parametrize("case", range(6))
@pytest.mark.parametrize("padded", [False, True])
def test_processor_options_greedy_as_transformers(pair, case, padded):
    ref, model = pair
    ids, mask = _batch(padded)
    opts = _cases(_free(ref, ids, mask), ids.shape[1])[case]
    kw = dict(dict(max_new_tokens=8, do_sample=False, eos_token_id=None, pad_token_id=0),
              **opts)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            return_dict_in_generate=True, output_scores=True, **kw)
    got = model.generate(ids, attention_mask=mask if padded else None,
                         return_dict_in_generate=True, output_scores=True, **kw)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    for mine, theirs in zip(got.scores, want.scores):
        theirs = theirs.numpy()
        live = np.isfinite(mine).any(axis=1)  # a padded row that finished: NaN after
        np.testing.assert_array_equal(np.isfinite(mine[live]), np.isfinite(theirs[live]))
        ok = np.isfinite(theirs) & live[:, None]
        np.testing.assert_allclose(mine[ok], theirs[ok], atol=1e-4)
    plain = model.generate(ids, attention_mask=mask if padded else None, max_new_tokens=8,
                           eos_token_id=None, pad_token_id=0)
    assert not np.array_equal(plain, got.sequences)  # the option acted


@pytest.mark.parametrize("warper", [dict(min_p=0.05), dict(min_p=0.3), dict(typical_p=0.6),
                                    dict(epsilon_cutoff=0.02), dict(eta_cutoff=0.05),
                                    dict(min_p=0.1, typical_p=0.9, eta_cutoff=0.01)])
def test_warpers_sampling_as_transformers(pair, warper):
    ref, model = pair
    ids, mask = _batch(True)
    kw = dict(do_sample=True, **warper, top_k=0, temperature=1.5, max_new_tokens=8,
              eos_token_id=None, pad_token_id=0, return_dict_in_generate=True,
              output_scores=True)
    torch.manual_seed(3)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **kw)
    got = model.generate(ids, attention_mask=mask,
                         generator=torch.Generator().manual_seed(3), **kw)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    for mine, theirs in zip(got.scores, want.scores):
        np.testing.assert_array_equal(np.isfinite(mine), np.isfinite(theirs.numpy()))


def test_processor_options_mistakes(pair):
    _, model = pair
    ids = np.array([[3, 4, 5]])
    with pytest.raises(ValueError, match="list of lists"):
        model.generate(ids, bad_words_ids=[3, 4], max_new_tokens=2)
    with pytest.raises(ValueError, match="sequence_bias is a dict"):
        model.generate(ids, sequence_bias=[[3, 4, 5]], max_new_tokens=2)


@pytest.mark.parametrize("warper", ["typical_p", "epsilon_cutoff", "eta_cutoff", "min_p"])
def test_warpers_equal_transformers_on_logits(warper):
    """Each warper on the same logits: the tokens kept are transformers' (its warper after
    a softmax of the kept scores)."""
    import transformers

    z = torch.randn(6, 40, generator=torch.Generator().manual_seed(2)) * 2
    value = {"typical_p": 0.7, "epsilon_cutoff": 0.03, "eta_cutoff": 0.02, "min_p": 0.1}[warper]
    cls = {"typical_p": transformers.TypicalLogitsWarper,
           "epsilon_cutoff": transformers.EpsilonLogitsWarper,
           "eta_cutoff": transformers.EtaLogitsWarper,
           "min_p": transformers.MinPLogitsWarper}[warper]
    want = np.isfinite(cls(value)(None, z.clone()).numpy())
    p = torch.softmax(z.double(), -1).numpy()
    got = ExtraProcessors({warper: value}).warp(p) > 0
    np.testing.assert_array_equal(got, want)

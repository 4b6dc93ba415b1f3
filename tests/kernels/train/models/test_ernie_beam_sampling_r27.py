"""Beam sampling (``generate(num_beams=N, do_sample=True)``, round 27; before: "beam
sampling is not supported") compared with transformers' on the same tiny checkpoints. With
``generator=torch.Generator().manual_seed(s)`` skiff draws with transformers' own call
(``torch.multinomial``), so after ``torch.manual_seed(s)`` transformers gives the same
sequences; ``sequences_scores`` and the warped per-step log-probabilities (temperature,
top-k, top-p over log-probabilities, at least n_eos + 1 kept) agree to 1e-4. A numpy seed
draws from the same distribution: checked by the candidates' support and reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.ernie_beam_sample import warp_log_probs

from .ernie_reference import make_checkpoint, torch, transformers


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("beamsample-" + request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


def _batch(padded):
    ids = np.random.default_rng(1).integers(3, 60, (2, 5))
    mask = np.ones_like(ids)
    if padded:
        ids[1, :2], mask[1, :2] = 0, 0
    return ids, mask


CASES = [
    dict(num_beams=3, temperature=0.7, top_k=10),
    dict(num_beams=4, top_p=0.9, top_k=0, num_return_sequences=2, length_penalty=0.5),
    dict(num_beams=2, temperature=1.3, top_k=6, top_p=0.8, early_stopping=True,
         repetition_penalty=1.2),
]


@pytest.mark.parametrize("case,padded,seed", [(0, False, 0), (1, True, 1), (2, True, 2)])
def test_beam_sampling_equals_transformers(pair, case, padded, seed):
    ref, model = pair
    ids, mask = _batch(padded)
    eos = [7, 11]
    kw = dict(CASES[case], do_sample=True, max_new_tokens=8, eos_token_id=eos,
              pad_token_id=0, return_dict_in_generate=True, output_scores=True)
    torch.manual_seed(seed)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids),
                            attention_mask=torch.tensor(mask), **kw)
    got = model.generate(ids, attention_mask=mask,
                         generator=torch.Generator().manual_seed(seed), **kw)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    np.testing.assert_allclose(got.sequences_scores, want.sequences_scores.numpy(),
                               atol=1e-4)
    assert len(got.scores) == len(want.scores)
    for mine, theirs in zip(got.scores, want.scores):
        theirs = theirs.numpy()
        np.testing.assert_array_equal(np.isfinite(mine), np.isfinite(theirs))
        ok = np.isfinite(theirs)
        np.testing.assert_allclose(mine[ok], theirs[ok], atol=1e-4)
    if case == 0:  # a numpy seed repeats
        a = model.generate(ids, attention_mask=mask, seed=0, **kw).sequences
        b = model.generate(ids, attention_mask=mask, seed=0, **kw).sequences
        np.testing.assert_array_equal(a, b)


def test_numpy_draws_differ_from_greedy_beams(pair):
    ref, model = pair
    ids, mask = _batch(True)
    kw = dict(num_beams=3, max_new_tokens=8, eos_token_id=None, pad_token_id=0,
              temperature=2.0, top_k=0)
    beams = model.generate(ids, attention_mask=mask, do_sample=False, **kw)
    sampled = {model.generate(ids, attention_mask=mask, do_sample=True, seed=s,
                              **kw).tobytes() for s in range(4)}
    assert len(sampled) > 1 and beams.tobytes() not in sampled


@pytest.mark.parametrize("top_k,top_p,temp,keep", [(5, 1.0, 1.0, 2), (0, 0.6, 0.8, 3),
                                                   (1, 0.3, 1.5, 2)])
def test_warpers_on_log_probs_equal_transformers(top_k, top_p, temp, keep):
    z = torch.log_softmax(torch.randn(4, 50, generator=torch.Generator().manual_seed(3)), -1)
    procs = transformers.LogitsProcessorList()
    if temp != 1.0:
        procs.append(transformers.TemperatureLogitsWarper(temp))
    if top_k:
        procs.append(transformers.TopKLogitsWarper(top_k, min_tokens_to_keep=keep))
    if top_p < 1.0:
        procs.append(transformers.TopPLogitsWarper(top_p, min_tokens_to_keep=keep))
    want = procs(None, z.clone()).numpy()
    got = warp_log_probs(z.numpy().copy(), temp, top_k, top_p, keep)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], atol=1e-6)

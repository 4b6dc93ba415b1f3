"""transformers' ``model.compute_transition_scores(sequences, scores, beam_indices,
normalize_logits)`` (round 37, h6; an AttributeError): greedy, beams with
``num_return_sequences`` and sampled rows of a left-padded batch, each against
transformers' own call on its own outputs."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

IDS = np.array([[0, 0, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14]])
MASK = (IDS != 0).astype(np.int64)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cts37")
    _, ref = make_checkpoint(folder, "moe-shared", seed=0)
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("kw", [dict(), dict(num_beams=3, num_return_sequences=2),
                                dict(do_sample=True, top_k=5, num_return_sequences=2)])
def test_transition_scores_equal_transformers(models, kw):
    ref, model = models
    torch.manual_seed(0)
    with torch.no_grad():
        theirs = ref.generate(torch.tensor(IDS), attention_mask=torch.tensor(MASK),
                              max_new_tokens=5, return_dict_in_generate=True,
                              output_scores=True, pad_token_id=0, **kw)
    mine = model.generate(IDS, attention_mask=MASK, max_new_tokens=5, pad_token_id=0,
                          return_dict_in_generate=True, output_scores=True,
                          generator=torch.Generator().manual_seed(0), **kw)
    np.testing.assert_array_equal(np.asarray(mine.sequences), theirs.sequences.numpy())
    beams = "num_beams" in kw
    for norm in (False, True):
        want = ref.compute_transition_scores(
            theirs.sequences, theirs.scores, theirs.beam_indices if beams else None,
            normalize_logits=norm).numpy()
        got = model.compute_transition_scores(
            mine.sequences, mine.scores, mine.beam_indices if beams else None,
            normalize_logits=norm)
        assert isinstance(got, np.ndarray) and got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-4)
    as_torch = model.compute_transition_scores(
        torch.as_tensor(np.asarray(mine.sequences)),
        tuple(torch.as_tensor(np.asarray(s)) for s in mine.scores),
        torch.as_tensor(np.asarray(mine.beam_indices)) if beams else None)
    assert isinstance(as_torch, torch.Tensor)
    if beams:  # transformers' docstring: the sum over the length penalty is the beam score
        got = model.compute_transition_scores(mine.sequences, mine.scores, mine.beam_indices)
        length = (got < 0).sum(axis=1)
        np.testing.assert_allclose(got.sum(axis=1) / length, np.asarray(mine.sequences_scores),
                                   rtol=1e-5)

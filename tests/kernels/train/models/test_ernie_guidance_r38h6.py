"""``generate(guidance_scale=g)`` (round 38, h6; refused before): transformers'
``UnbatchedClassifierFreeGuidanceLogitsProcessor``, first of the processors: the scores
log-softmaxed, then ``g (scores - u) + u`` with ``u`` the model's log-probabilities after an
unconditional prompt (each row's last prompt token, or ``negative_prompt_ids`` with their
mask) and the tokens generated so far (one cached step each, as transformers). Tokens and
scores against transformers 5 on a left-padded batch, dense and MoE; ``diversity_penalty``
without beam groups is accepted as transformers takes it (no effect)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

IDS = np.array([[0, 0, 5, 6, 7, 8, 9], [11, 12, 13, 14, 15, 16, 17]])
MASK = (IDS != 0).astype(np.int64)


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp("cfg38"), request.param)
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("kw", [
    dict(guidance_scale=1.5),
    dict(guidance_scale=3.0, do_sample=True, top_k=10),
    dict(guidance_scale=2.0, negative_prompt_ids=np.array([[3, 4], [20, 21]])),
    dict(guidance_scale=0.5, negative_prompt_ids=np.array([[0, 4], [20, 21]]),
         negative_prompt_attention_mask=np.array([[0, 1], [1, 1]])),
    dict(guidance_scale=1.5, repetition_penalty=1.3, sequence_bias={(9,): 2.0}),
], ids=["greedy", "sampled", "negative", "negative-masked", "with-processors"])
def test_guidance_scale_as_transformers(pair, kw):
    ref, model = pair
    torch_kw = {k: torch.as_tensor(v) if isinstance(v, np.ndarray) else v
                for k, v in kw.items()}
    torch.manual_seed(0)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.as_tensor(IDS), attention_mask=torch.as_tensor(
            MASK), max_new_tokens=8, pad_token_id=0, return_dict_in_generate=True,
            output_scores=True, **torch_kw)
    got = model.generate(input_ids=IDS, attention_mask=MASK, max_new_tokens=8,
                         generator=torch.Generator().manual_seed(0),
                         return_dict_in_generate=True, output_scores=True, **kw)
    np.testing.assert_array_equal(np.asarray(got.sequences), want.sequences.numpy())
    mine = np.stack([np.asarray(s) for s in got.scores])
    theirs = torch.stack(want.scores).numpy()
    finite = np.isfinite(theirs)
    assert (np.isfinite(mine) == finite).all()
    np.testing.assert_allclose(mine[finite], theirs[finite], atol=1e-4)
    plain = model.generate(input_ids=IDS, attention_mask=MASK, max_new_tokens=8,
                           generator=torch.Generator().manual_seed(0),
                           **{k: v for k, v in kw.items() if k == "do_sample" or k == "top_k"})
    assert not np.array_equal(plain, np.asarray(got.sequences))  # the guidance changed them


def test_guidance_one_and_diversity_without_groups_change_nothing(pair):
    ref, model = pair
    plain = model.generate(IDS, attention_mask=MASK, max_new_tokens=6)
    np.testing.assert_array_equal(model.generate(IDS, attention_mask=MASK, max_new_tokens=6,
                                                 guidance_scale=1.0), plain)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.as_tensor(IDS), attention_mask=torch.as_tensor(
            MASK), max_new_tokens=6, pad_token_id=0, num_beams=2, diversity_penalty=0.5)
    np.testing.assert_array_equal(model.generate(IDS, attention_mask=MASK, max_new_tokens=6,
                                                 num_beams=2, diversity_penalty=0.5),
                                  want.numpy())


def test_guidance_with_a_row_that_ends_early(pair):
    """A row ended by its eos leaves the batch (skiff's packed decoding): the unconditional
    run keeps it in its cache, as transformers keeps it; the other rows' tokens equal."""
    ref, model = pair
    first = np.asarray(model.generate(IDS, attention_mask=MASK, max_new_tokens=8,
                                      guidance_scale=2.0))
    eos = int(first[0, IDS.shape[1] + 2])  # row 0 ends at its third new token
    with torch.no_grad():
        want = ref.generate(input_ids=torch.as_tensor(IDS), attention_mask=torch.as_tensor(
            MASK), max_new_tokens=8, pad_token_id=0, eos_token_id=eos, guidance_scale=2.0)
    got = model.generate(IDS, attention_mask=MASK, max_new_tokens=8, pad_token_id=0,
                         eos_token_id=eos, guidance_scale=2.0)
    assert (want[0, IDS.shape[1] + 3:] == 0).all()  # it did end early
    np.testing.assert_array_equal(np.asarray(got), want.numpy())

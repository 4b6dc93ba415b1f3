"""Beam search (``ernie_beam.generate_beams``, transformers' ``generate(num_beams=N)``)
compared with transformers' ``generate`` on the same tiny checkpoints (dense and MoE): the
same token sequences, ``sequences_scores`` within 1e-4 and the per-step processed
log-probabilities (``scores``), for one prompt and a left-padded batch, with several
``num_beams`` / ``length_penalty`` / ``early_stopping`` / ``num_return_sequences``."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.ernie_beam import generate_beams

from .ernie_reference import make_checkpoint, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def beam_pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("beam-" + request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


def _batch():
    ids = np.random.default_rng(1).integers(3, 60, (2, 5))
    mask = np.ones_like(ids)
    ids[1, :2], mask[1, :2] = 0, 0  # left padding
    return ids, mask


CASES = [
    dict(num_beams=3),
    dict(num_beams=4, length_penalty=0.5, early_stopping=True, num_return_sequences=2),
    dict(num_beams=3, length_penalty=2.0, early_stopping="never", num_return_sequences=3),
    dict(num_beams=2, length_penalty=-1.0, no_repeat_ngram_size=2),
    dict(num_beams=3, min_new_tokens=4, repetition_penalty=1.3),
    dict(num_beams=3, early_stopping=True),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("padded", [False, True])
def test_beam_search_equals_transformers(beam_pair, case, padded):
    ref, model = beam_pair
    ids, mask = _batch()
    if not padded:
        ids, mask = ids[:1], mask[:1]
    # eos: the 4 tokens a 4-beam search without eos uses most, so hypotheses finish at
    # different lengths and the early-stopping rules decide when the search ends
    with torch.no_grad():
        free = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            num_beams=4, num_return_sequences=4, max_new_tokens=8,
                            eos_token_id=None, do_sample=False).numpy()
    eos = [int(t) for t in np.argsort(-np.bincount(free[:, ids.shape[1]:].reshape(-1)),
                                      kind="stable")[:4]]
    kw = dict(CASES[case], max_new_tokens=8, eos_token_id=eos, do_sample=False,
              return_dict_in_generate=True, output_scores=True)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **kw)
    got = generate_beams(model, ids, attention_mask=mask, **kw)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    # float32 (round 48 h9): a sequence's score sums its 8 steps' log-probabilities, each
    # within the per-step 1e-4 below: 5.6e-5 apart at worst over native, OpenBLAS
    # Sandybridge + ATen avx2 and + ATen default (0.56 of the 1e-4 used); 1e-3 keeps 18x
    np.testing.assert_allclose(got.sequences_scores, want.sequences_scores.numpy(), atol=1e-3)
    assert len(got.scores) == len(want.scores)
    for mine, theirs in zip(got.scores, want.scores):
        theirs = theirs.numpy()
        np.testing.assert_array_equal(np.isfinite(mine), np.isfinite(theirs))
        np.testing.assert_allclose(mine[np.isfinite(mine)], theirs[np.isfinite(theirs)],
                                   atol=1e-3)  # 2.1e-5 seen (round 48 h9): 48x
    # the plain call returns the same ids
    plain = {k: v for k, v in kw.items() if k not in ("return_dict_in_generate",
                                                        "output_scores")}
    np.testing.assert_array_equal(generate_beams(model, ids, attention_mask=mask, **plain),
                                  want.sequences.numpy())


def test_beam_search_without_eos_runs_to_max_length(beam_pair):
    ref, model = beam_pair
    ids, _ = _batch()
    kw = dict(num_beams=3, max_new_tokens=6, eos_token_id=None, do_sample=False)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids[:1]), **kw).numpy()
    got = generate_beams(model, ids[:1], **kw)
    assert got.shape == (1, ids.shape[1] + 6)
    np.testing.assert_array_equal(got, want)


def test_generation_config_and_torch_tensors(beam_pair):
    """A transformers ``GenerationConfig`` carrying the beam options, torch tensors as a
    tokenizer gives them: transformers' sequences."""
    from .ernie_reference import transformers

    ref, model = beam_pair
    ids, mask = _batch()
    enc = dict(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    gc = transformers.GenerationConfig(num_beams=3, num_return_sequences=2, max_new_tokens=5,
                                       length_penalty=0.7, eos_token_id=None)
    with torch.no_grad():
        want = ref.generate(**enc, generation_config=gc).numpy()
    got = generate_beams(model, **enc, generation_config=gc)
    assert got.shape == (4, ids.shape[1] + 5)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kw, says", [
    (dict(num_beams=2, do_sample=True, temperature=0.0), "temperature must be > 0"),
    (dict(num_beams=2, num_return_sequences=3), "num_return_sequences=3"),
    (dict(num_beams=2, num_beam_groups=2, diversity_penalty=0.5), "num_beam_groups"),
    (dict(num_beams=2, early_stopping="sometimes"), "early_stopping"),
    # stop strings act on beams since round 34 (h6): without a tokenizer, the refusal
    (dict(num_beams=2, stop_strings=["x"]), "stop strings need a tokenizer"),
    (dict(num_beams=1), "num_beams=1 is greedy"),
])
def test_unsupported_beam_options_are_one_error(beam_pair, kw, says):
    _, model = beam_pair
    ids, _ = _batch()
    with pytest.raises(ValueError, match=says):
        generate_beams(model, ids[:1], max_new_tokens=2, **kw)


def test_model_generate_runs_beams_as_transformers(beam_pair):
    """``model.generate(..., num_beams=N)`` (transformers' call, a padded batch or a
    GenerationConfig carrying num_beams) runs the beam search: transformers' sequences."""
    from .ernie_reference import transformers

    ref, model = beam_pair
    ids, mask = _batch()
    kw = dict(num_beams=3, num_return_sequences=2, max_new_tokens=5, length_penalty=0.7,
              eos_token_id=None, do_sample=False)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **kw).numpy()
    np.testing.assert_array_equal(model.generate(ids, attention_mask=mask, **kw), want)
    gc = transformers.GenerationConfig(num_beams=3, max_new_tokens=4, eos_token_id=None)
    with torch.no_grad():
        want = ref.generate(torch.tensor(ids[:1]), generation_config=gc).numpy()
    np.testing.assert_array_equal(model.generate(ids[:1], generation_config=gc), want)

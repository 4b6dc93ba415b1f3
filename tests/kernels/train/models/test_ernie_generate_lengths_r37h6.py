"""Round 37, h6: prompt lookup with ``top_p`` < 1 (transformers checks each proposed token
against its warpers on uniform logits, where top-p bars the ids torch's sort puts first:
the proposal is cut there, so the draws come in its order), and ``min_new_tokens`` above
``max_new_tokens`` (transformers' "Unfeasible length constraints" warning; the tokens stop
at the maximum), each against transformers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch

IDS = np.array([[5, 6, 7, 8, 9, 10, 5, 6, 7, 8, 9, 10, 5, 6]])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("len37")
    _, ref = make_checkpoint(folder, "dense-gqa-tied", seed=0)
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("kw,seed", [
    (dict(top_p=0.5), 0),
    (dict(top_p=0.3, top_k=10), 2),
    (dict(top_p=0.9, temperature=0.7), 1),
])
def test_prompt_lookup_top_p_equals_transformers(models, kw, seed):
    ref, model = models
    torch.manual_seed(seed)
    with torch.no_grad():
        want = ref.generate(torch.tensor(IDS), pad_token_id=0, eos_token_id=None, do_sample=True,
                            prompt_lookup_num_tokens=3, max_new_tokens=20, **kw).numpy()
    got = model.generate(IDS, eos_token_id=None, do_sample=True, prompt_lookup_num_tokens=3,
                         max_new_tokens=20, generator=torch.Generator().manual_seed(seed), **kw)
    np.testing.assert_array_equal(got, want)


def test_min_new_tokens_above_max_warns_as_transformers(models):
    ref, model = models
    eos = int(model.generate(IDS, max_new_tokens=1)[0, -1])  # greedy's first token
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        with torch.no_grad():
            want = ref.generate(torch.tensor(IDS), pad_token_id=0, eos_token_id=eos,
                                max_new_tokens=3, min_new_tokens=5).numpy()
    with warnings.catch_warnings(record=True) as mine:
        warnings.simplefilter("always")
        got = model.generate(IDS, eos_token_id=eos, max_new_tokens=3, min_new_tokens=5)
    np.testing.assert_array_equal(got, want)  # eos barred throughout, 3 tokens
    said = [str(w.message) for w in mine if "Unfeasible" in str(w.message)]
    # transformers adds "Note that `max_length` is set to 17, its default value." (it is
    # not: max_new_tokens set it); skiff's words are its words before that note
    assert said and any(str(w.message).startswith(said[0]) for w in theirs)
    with warnings.catch_warnings(record=True) as mine:
        warnings.simplefilter("always")
        model.generate(IDS, max_new_tokens=3, min_length=30)
    assert any("`min_length` (30) is larger than the maximum possible length (17)"
               in str(w.message) for w in mine)

"""Sampling reproducible against transformers (round 27): ``generate(do_sample=True,
generator=torch.Generator().manual_seed(s))`` draws with transformers' call
(``torch.multinomial(probs, 1)`` over the whole batch, rows that finished included), so it
gives transformers' sampled tokens after ``torch.manual_seed(s)``: one row, a left-padded
batch whose rows finish at different steps (the packed path), ``num_return_sequences``,
with temperature / top-k / top-p / repetition penalty. Before, only numpy generators were
taken and no sampled run could be compared token for token."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tgen-" + request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


CASES = [
    dict(temperature=0.8, top_k=20),
    dict(temperature=1.2, top_k=0, top_p=0.9, repetition_penalty=1.3),
    dict(top_k=5, num_return_sequences=2, no_repeat_ngram_size=2),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("padded", [False, True])
def test_sampling_with_torch_generator_equals_transformers(pair, case, padded):
    ref, model = pair
    ids = np.random.default_rng(1).integers(3, 60, (3, 6))
    mask = np.ones_like(ids)
    if padded:
        ids[1, :3], mask[1, :3], ids[2, :1], mask[2, :1] = 0, 0, 0, 0
    # eos: tokens the sampled rows emit, so rows finish at different steps
    torch.manual_seed(7)
    with torch.no_grad():
        free = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            do_sample=True, max_new_tokens=12, eos_token_id=None,
                            **CASES[case]).numpy()
    eos = [int(free[0, ids.shape[1] + 3]), int(free[-1, ids.shape[1] + 6])]
    kw = dict(CASES[case], do_sample=True, max_new_tokens=12, eos_token_id=eos,
              pad_token_id=0)
    torch.manual_seed(7)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **kw).numpy()
    got = model.generate(ids, attention_mask=mask if padded else None,
                         generator=torch.Generator().manual_seed(7), **kw)
    np.testing.assert_array_equal(got, want)
    assert (want[:, ids.shape[1]:] == 0).any()  # some row finished early


def test_torch_generator_moves_on(pair):
    _, model = pair
    ids = np.array([[3, 4, 5, 6]])
    g = torch.Generator().manual_seed(0)
    a = model.generate(ids, do_sample=True, top_k=0, temperature=3.0, max_new_tokens=10,
                       eos_token_id=None, generator=g)
    b = model.generate(ids, do_sample=True, top_k=0, temperature=3.0, max_new_tokens=10,
                       eos_token_id=None, generator=g)
    assert not np.array_equal(a, b)

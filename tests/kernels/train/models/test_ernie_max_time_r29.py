"""``generate(..., max_time=seconds)`` (round 29; was "does not support max_time"):
transformers' ``MaxTimeCriteria``, checked after each step. No timing is asserted: a limit
of 0 s stops every row after its first token, one of an hour lets them run, both as
transformers' generate does (greedy and sampling, one row and a left-padded batch)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp("mt"), "dense-gqa-tied")
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("seconds", [0.0, 3600.0])
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("sample", [False, True])
def test_max_time_as_transformers(pair, seconds, padded, sample):
    ref, model = pair
    ids = torch.tensor(random_ids(model.config.vocab_size, (2, 6), seed=3))
    mask = torch.ones_like(ids)
    if padded:
        mask[1, :2] = 0
    kw = dict(max_new_tokens=5, max_time=seconds, attention_mask=mask,
              pad_token_id=0, eos_token_id=None)
    kw.update(dict(do_sample=True, top_k=10) if sample else dict(do_sample=False))
    torch.manual_seed(0)
    want = ref.generate(ids, **kw).numpy()
    got = model.generate(ids, generator=torch.Generator().manual_seed(0), **kw)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert want.shape[1] == 6 + (1 if seconds == 0 else 5)


def test_bad_max_time_is_one_error(pair):
    _, model = pair
    with pytest.raises(ValueError, match="max_time must be a number"):
        model.generate(random_ids(model.config.vocab_size, (1, 4)), max_time="10s")

"""``generate(do_sample=True, top_h=...)``: transformers 5's entropy-bounded warper (round
33; was "skiff's generate does not support top_h"), after the temperature and before top-k
as transformers orders it: the kept sets equal ``TopHLogitsWarper``'s, and the sampled
sequences and scores equal transformers' under the same torch generator (one row, a
left-padded batch, beam sampling)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.ernie_generate_processors import ExtraProcessors

from .ernie_reference import make_checkpoint, torch, transformers


@pytest.mark.parametrize("top_h", [0.2, 0.5, 0.9, 0.97])  # at 1.0 the last token sits on
# the bound: rounding decides (torch sums the entropy in another order)
def test_kept_sets_equal_transformers(top_h):
    z = torch.randn(8, 150, generator=torch.Generator().manual_seed(3)) * 2
    z[0, :40] = -float("inf")  # fewer than 100 finite
    want = np.isfinite(transformers.TopHLogitsWarper(top_h)(None, z.clone()).numpy())
    got = ExtraProcessors({"top_h": top_h}).top_h_(z.numpy().astype(np.float64).copy())
    np.testing.assert_array_equal(np.isfinite(got), want)
    assert 1 <= want.sum(axis=1).min() and want.sum(axis=1).max() < 100


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toph")
    _, ref = make_checkpoint(folder, "dense-gqa-tied")
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("kw", [dict(top_h=0.4), dict(top_h=0.6, temperature=1.7, top_k=30),
                                dict(top_h=0.5, num_beams=3, num_return_sequences=2)])
def test_sampling_as_transformers(pair, kw):
    ref, model = pair
    ids = np.random.default_rng(1).integers(3, 60, (2, 6))
    mask = np.ones_like(ids)
    ids[1, :2], mask[1, :2] = 0, 0
    common = dict(max_new_tokens=8, do_sample=True, eos_token_id=None,
                  return_dict_in_generate=True, output_scores=True, **kw)
    torch.manual_seed(5)
    with torch.no_grad():
        want = ref.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask),
                            **common)
    got = model.generate(ids, attention_mask=mask, generator=torch.Generator().manual_seed(5),
                         **common)
    np.testing.assert_array_equal(got.sequences, want.sequences.numpy())
    for g, w in zip(got.scores, want.scores):
        w = w.numpy()
        np.testing.assert_array_equal(np.isinf(g), np.isinf(w))
        np.testing.assert_allclose(g[np.isfinite(w)], w[np.isfinite(w)], atol=1e-3)

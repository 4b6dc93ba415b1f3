"""A padded ``generate(return_dict_in_generate=True)`` on the fused inference path (round
30b; it decoded on the graph layers: 1.7 s against 0.9 s for the packed path): the prompt's
real tokens prefilled packed into the padded cache, each decode step on the fused weights
with the padding masked out. Every step's logits and the cache's real positions equal
transformers' ``generate`` with its own cache, a second turn continued (padding between
the turns), dense and MoE; the fused path is the one taken."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import ernie_infer, from_pretrained

from .ernie_reference import make_checkpoint, torch

PAD = 0


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder)


def left_padded(V, lengths, seed):
    rng = np.random.default_rng(seed)
    W = max(lengths)
    ids = np.full((len(lengths), W), PAD, np.int64)
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        ids[b, W - n:] = rng.integers(3, V, n)
        mask[b, W - n:] = 1
    return ids, mask


def same_logits(got, want):
    for g, w in zip(got, want):
        w = w.numpy()
        np.testing.assert_allclose(np.asarray(g), w, atol=1e-4 * max(1, np.abs(w).max()))


def test_padded_return_dict_on_the_fused_path(pair, monkeypatch):
    ref, model = pair
    steps = []
    real_step = ernie_infer.decode_step
    monkeypatch.setattr(ernie_infer, "decode_step",
                        lambda *a, **k: steps.append(k.get("keymask") is not None)
                        or real_step(*a, **k))
    ids, mask = left_padded(model.config.vocab_size, [2, 7, 4], seed=11)
    kw = dict(max_new_tokens=5, do_sample=False, pad_token_id=PAD, eos_token_id=None,
              return_dict_in_generate=True, output_logits=True)
    t = torch.tensor
    want = ref.generate(t(ids), attention_mask=t(mask), **kw)
    got = model.generate(ids, attention_mask=mask, **kw)
    np.testing.assert_array_equal(np.asarray(got.sequences), want.sequences.numpy())
    same_logits(got.logits, want.logits)
    assert steps.count(True) == 4  # the decode steps after the prefill, fused
    real = np.concatenate([mask, np.ones((3, 4), np.int64)], 1).astype(bool)
    for (k, v), layer in zip(got.past_key_values, want.past_key_values.layers):
        for mine, theirs in ((k, layer.keys), (v, layer.values)):
            theirs = theirs.numpy().transpose(0, 2, 1, 3)
            np.testing.assert_allclose(np.asarray(mine).transpose(0, 2, 1, 3)[real],
                                       theirs[real], atol=1e-5 * np.abs(theirs).max())
    # a second turn, left-padded after the first (padding between tokens), both caches on
    turn, turn_mask = left_padded(model.config.vocab_size, [3, 1, 2], seed=12)
    ids2 = np.concatenate([np.asarray(got.sequences), turn], 1)
    mask2 = np.concatenate([mask, np.ones((3, 5), np.int64), turn_mask], 1)
    want2 = ref.generate(t(ids2), attention_mask=t(mask2), past_key_values=want.past_key_values,
                         **kw)
    got2 = model.generate(ids2, attention_mask=mask2, past_key_values=got.past_key_values, **kw)
    np.testing.assert_array_equal(np.asarray(got2.sequences), want2.sequences.numpy())
    same_logits(got2.logits, want2.logits)

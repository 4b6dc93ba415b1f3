"""Packed rows as transformers' ``DataCollatorWithFlattening`` makes them (round 28;
``model(**batch)`` with ``position_ids`` was "unexpected keyword argument"): each restart
of the positions begins a sequence that attends to itself only, as transformers 5 reads
them; logits, the loss with the collator's labels and the gradients equal transformers'
(``use_cache=False``, as in training), dense and MoE; positions that do not restart (a
plain or offset range) give the row's ordinary logits."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    _, ref = make_checkpoint(folder, request.param)
    return ref, from_pretrained(folder)


def test_flattened_batch_equals_transformers(pair):
    ref, model = pair
    V = model.config.vocab_size
    examples = [{"input_ids": random_ids(V, (n,), seed=s).tolist()}
                for n, s in ((5, 1), (3, 2), (7, 3), (2, 4))]
    batch = transformers.DataCollatorWithFlattening()(examples)
    assert (np.diff(batch["position_ids"][0]) != 1).sum() == 3  # four sequences, one row
    ref.zero_grad()
    want = ref(**batch, use_cache=False)
    want.loss.backward()
    got = model(**{k: v.numpy() for k, v in batch.items()})
    scale = np.abs(want.logits.detach().numpy()).max()
    np.testing.assert_allclose(np.asarray(got.logits.numpy()), want.logits.detach().numpy(),
                               atol=1e-5 * scale)
    assert abs(got.loss.item() - want.loss.item()) <= 1e-5 * want.loss.item()
    # each example alone gives the same logits (no attention across the boundaries)
    alone = np.concatenate([np.asarray(model(np.array([e["input_ids"]])).numpy())[0]
                            for e in examples])
    np.testing.assert_allclose(np.asarray(got.logits.numpy())[0], alone, atol=1e-5 * scale)
    got.loss.backward()
    mine = dict(model.named_parameters())
    for name, p in ref.named_parameters():
        if name in mine and p.grad is not None:
            g = p.grad.numpy()
            np.testing.assert_allclose(np.asarray(mine[name].grad.numpy()), g,
                                       atol=1e-4 * max(np.abs(g).max(), 1e-6), err_msg=name)


@pytest.mark.parametrize("start", [0, 5])
def test_positions_without_restart(pair, start):
    ref, model = pair
    ids = random_ids(model.config.vocab_size, (2, 8), seed=9)
    pos = np.arange(start, start + 8)[None]  # one row of positions for both, as transformers
    with torch.no_grad():
        want = ref(torch.tensor(ids), position_ids=torch.tensor(pos), use_cache=False)
    got = model(ids, position_ids=pos)
    np.testing.assert_allclose(np.asarray(got.numpy()), want.logits.numpy(), atol=1e-4)
    # with a mask too (round 30b: was an error): the same logits, as transformers'
    got = model(ids, position_ids=pos, attention_mask=np.ones_like(ids))
    np.testing.assert_allclose(np.asarray(got.numpy()), want.logits.numpy(), atol=1e-4)

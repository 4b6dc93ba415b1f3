"""``model(ids, attention_mask=m, position_ids=p)`` trains (round 30b; it ran without a
graph, and with labels it raised): a left-padded batch at the positions a DPO/TRL collator
gives (``cumsum(mask) - 1``) or an offset range; the loss, the logits of real tokens and
every parameter's gradient equal transformers' (``use_cache=False``), dense and MoE (with
its balancing loss over the real tokens), with gradient checkpointing too; the output's
cache equals transformers'."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder)


def padded(V, lengths, seed):
    rng = np.random.default_rng(seed)
    W = max(lengths)
    ids = np.zeros((len(lengths), W), np.int64)
    mask = np.zeros_like(ids)
    for b, n in enumerate(lengths):
        ids[b, W - n:] = rng.integers(3, V, n)
        mask[b, W - n:] = 1
    return ids, mask


def grads_equal(ref, model):
    mine = dict(model.named_parameters())
    seen = 0
    for name, p in ref.named_parameters():
        if p.grad is None or name not in mine:
            continue
        g = p.grad.numpy()
        assert mine[name].grad is not None, name
        np.testing.assert_allclose(np.asarray(mine[name].grad.numpy()), g,
                                   atol=1e-4 * max(np.abs(g).max(), 1e-6), err_msg=name)
        seen += 1
    assert seen > 5


@pytest.mark.parametrize("kind", ["cumsum", "offset", "checkpointed"])
def test_padded_positions_train_as_transformers(pair, kind):
    ref, model = pair
    if kind == "checkpointed":  # each layer recomputed in backward: the same gradients
        model.gradient_checkpointing_enable()
    ids, mask = padded(model.config.vocab_size, [4, 7, 5], seed=3)
    pos = (np.maximum(np.cumsum(mask, 1) - 1, 0) if kind == "cumsum"
           else np.arange(3, 3 + ids.shape[1])[None])
    labels = np.where(mask == 1, ids, -100)
    labels[:, 1:][mask[:, :-1] == 0] = -100  # a label predicted from padding: left out
    t = torch.tensor
    ref.zero_grad()
    moe = model.config.is_moe
    want = ref(t(ids), attention_mask=t(mask), position_ids=t(pos), labels=t(labels),
               use_cache=False, output_router_logits=moe)
    want.loss.backward()
    model.zero_grad()
    got = model(ids, attention_mask=mask, position_ids=pos, labels=labels,
                output_router_logits=moe)
    assert abs(got.loss.item() - want.loss.item()) <= 1e-5 * abs(want.loss.item())
    if moe:
        assert abs(got.aux_loss.item() - want.aux_loss.item()) <= 1e-5 * want.aux_loss.item()
    real = mask.astype(bool)
    w = want.logits.detach().numpy()
    np.testing.assert_allclose(np.asarray(got.logits.numpy())[real], w[real],
                               atol=1e-5 * np.abs(w).max())
    got.loss.backward()
    model.gradient_checkpointing_disable()
    grads_equal(ref, model)


def test_logits_have_a_graph_and_a_cache(pair):
    ref, model = pair
    ids, mask = padded(model.config.vocab_size, [3, 6], seed=5)
    pos = np.maximum(np.cumsum(mask, 1) - 1, 0)
    t = torch.tensor
    ref.zero_grad()
    want = ref(t(ids), attention_mask=t(mask), position_ids=t(pos), use_cache=True)
    (want.logits[torch.tensor(mask.astype(bool))] ** 2).mean().backward()
    model.zero_grad()
    got = model(ids, attention_mask=mask, position_ids=pos)
    logits = got.logits if hasattr(got, "logits") else got
    real_rows = logits.reshape(-1, logits.shape[-1])[np.flatnonzero(mask.reshape(-1))]
    (real_rows ** 2).mean().backward()
    grads_equal(ref, model)
    real = mask.astype(bool)
    for (k, _v), layer in zip(got.past_key_values, want.past_key_values.layers):
        wk = layer.keys.detach().transpose(1, 2).numpy()
        np.testing.assert_allclose(np.asarray(k).transpose(0, 2, 1, 3)[real], wk[real],
                                   atol=1e-5 * np.abs(wk).max())


def test_logits_to_keep_and_router_config(pair):
    """``logits_to_keep`` and an MoE config's ``output_router_logits`` on this path: the last
    logits and the (lazily computed) cache equal transformers'."""
    ref, model = pair
    ids, mask = padded(model.config.vocab_size, [2, 5], seed=7)
    pos = np.maximum(np.cumsum(mask, 1) - 1, 0)
    t = torch.tensor
    with torch.no_grad():
        want = ref(t(ids), attention_mask=t(mask), position_ids=t(pos), logits_to_keep=1,
                   use_cache=True)
    got = model(ids, attention_mask=mask, position_ids=pos, logits_to_keep=1)
    w = want.logits.numpy()
    np.testing.assert_allclose(np.asarray(got.numpy()), w, atol=1e-5 * np.abs(w).max())
    before = model.config.output_router_logits
    model.config.output_router_logits = True
    try:
        cache = model(ids, attention_mask=mask, position_ids=pos).past_key_values
    finally:
        model.config.output_router_logits = before
    real = mask.astype(bool)
    for (k, _v), layer in zip(cache, want.past_key_values.layers):
        wk = layer.keys.transpose(1, 2).numpy()
        np.testing.assert_allclose(np.asarray(k).transpose(0, 2, 1, 3)[real], wk[real],
                                   atol=1e-5 * np.abs(wk).max())

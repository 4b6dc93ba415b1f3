"""``model(ids, output_hidden_states=True)`` (round 27; was "not supported"): transformers'
``hidden_states`` (the embeddings, each layer's output, the last after the final norm) on
the same checkpoints, dense and MoE, one batch and a left-padded one (real positions), with
labels too; the states carry gradients (a loss on a middle layer's states equals torch's
gradient of the same loss)."""

from __future__ import annotations

import numpy as np

from .ernie_reference import random_ids, torch
from .ernie_reference import shape_pair as shape_pair  # the fixture


def test_hidden_states_equal_transformers(shape_pair):
    _, ref, model = shape_pair
    V = model.config.vocab_size
    ids = random_ids(V, (2, 7))
    mask = np.ones_like(ids)
    mask[1, :3] = 0
    for m in (None, mask):
        kw = {} if m is None else {"attention_mask": torch.tensor(m)}
        with torch.no_grad():
            want = ref(torch.tensor(ids), output_hidden_states=True, **kw)
        got = model(ids, output_hidden_states=True,
                    **({} if m is None else {"attention_mask": m}))
        real = np.ones(ids.shape, bool) if m is None else m == 1
        assert len(got.hidden_states) == len(want.hidden_states) == \
            model.config.num_hidden_layers + 1
        for mine, theirs in zip(got.hidden_states, want.hidden_states):
            theirs = theirs.numpy()
            np.testing.assert_allclose(np.asarray(mine.numpy())[real], theirs[real],
                                       atol=1e-4 * np.abs(theirs).max())
        np.testing.assert_allclose(np.asarray(got.logits.numpy())[real],
                                   want.logits.numpy()[real],
                                   atol=1e-4 * np.abs(want.logits.numpy()).max())
    out = model(ids, output_hidden_states=True, labels=ids)
    with torch.no_grad():
        theirs = ref(torch.tensor(ids), labels=torch.tensor(ids)).loss.item()
    assert abs(out.loss.item() - theirs) < 1e-4 * abs(theirs)
    assert out[2] is out.hidden_states  # (loss, logits, hidden_states), as transformers


def test_hidden_states_have_gradients(shape_pair):
    _, ref, model = shape_pair
    ids = random_ids(model.config.vocab_size, (1, 5))
    out = model(ids, output_hidden_states=True)
    loss = (out.hidden_states[1] ** 2).mean()
    loss.backward()
    name = "model.layers.0.self_attn.q_proj.weight"
    g = np.asarray(dict(model.named_parameters())[name].grad.numpy())
    tout = ref(torch.tensor(ids), output_hidden_states=True)
    ref.zero_grad()
    (tout.hidden_states[1] ** 2).mean().backward()
    want = dict(ref.named_parameters())[name].grad.numpy()
    np.testing.assert_allclose(g, want, atol=1e-5 + 1e-4 * np.abs(want).max())
    for p in model.parameters():
        p.grad = None

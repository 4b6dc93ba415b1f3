"""``model(ids, output_attentions=True)`` (round 28; was "output_attentions is not
supported"): each layer's (B, H, T, T) weights equal transformers' eager attention's, one
row and a left- or right-padded batch (the real queries' rows), dense and MoE; they are graph
tensors (a loss on them has gradients, equal to torch's through transformers)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def pair(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    make_checkpoint(folder, request.param)
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager").eval()
    return ref, from_pretrained(folder)


@pytest.mark.parametrize("padding", [None, "left", "right"])
def test_attentions_equal_transformers_eager(pair, padding):
    ref, model = pair
    ids = random_ids(model.config.vocab_size, (3, 9), seed=5)
    mask = np.ones_like(ids)
    if padding == "left":
        mask[0, :3], mask[2, :1] = 0, 0
    elif padding == "right":
        mask[1, -4:], mask[2, -2:] = 0, 0
    kw = {} if padding is None else {"attention_mask": mask}
    with torch.no_grad():
        want = ref(torch.tensor(ids), output_attentions=True, output_hidden_states=True,
                   **{k: torch.tensor(v) for k, v in kw.items()})
    out = model(ids, output_attentions=True, **kw)
    assert out.hidden_states is None and len(out.attentions) == model.config.num_hidden_layers
    real = mask == 1
    for got, theirs in zip(out.attentions, want.attentions):
        got, theirs = np.asarray(got.numpy()), theirs.numpy()
        assert got.shape == theirs.shape
        for b in range(ids.shape[0]):
            q = np.flatnonzero(real[b])
            np.testing.assert_allclose(got[b][:, q][:, :, q], theirs[b][:, q][:, :, q],
                                       atol=1e-5)
            assert np.abs(got[b][:, q][:, :, ~real[b]]).max(initial=0) == 0  # padded keys
            assert np.abs(got[b][:, ~real[b]]).max(initial=0) == 0  # padded queries
        np.testing.assert_allclose(got.transpose(0, 2, 1, 3)[real].sum(-1), 1, atol=1e-5)
    np.testing.assert_allclose(np.asarray(out.logits.numpy())[real],
                               want.logits.numpy()[real], atol=1e-4)
    both = model(ids, output_attentions=True, output_hidden_states=True, **kw)
    assert len(both.hidden_states) == model.config.num_hidden_layers + 1


def test_attention_weights_have_torch_gradients(pair):
    """A loss on the weights (an attention-distillation term) back-propagates as torch's."""
    ref, model = pair
    ids = random_ids(model.config.vocab_size, (2, 7), seed=6)
    out = model(ids, output_attentions=True)
    loss = sum((a * a).sum() for a in out.attentions)
    loss.backward()
    ref.zero_grad()
    tout = ref(torch.tensor(ids), output_attentions=True)
    tloss = sum((a * a).sum() for a in tout.attentions)
    tloss.backward()
    assert abs(loss.item() - tloss.item()) <= 1e-4 * abs(tloss.item())
    mine = dict(model.named_parameters())
    for name in ("model.layers.0.self_attn.q_proj.weight", "model.layers.1.self_attn.k_proj.weight",
                 "model.layers.0.input_layernorm.weight", "model.embed_tokens.weight"):
        g = np.asarray(mine[name].grad.numpy())
        tg = dict(ref.named_parameters())[name].grad.numpy()
        np.testing.assert_allclose(g, tg, atol=1e-4 * np.abs(tg).max(), err_msg=name)

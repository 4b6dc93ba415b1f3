"""``model.model(ids).last_hidden_state`` and the small model methods scripts call (round
29; ``model.model(ids)`` was "ErnieModel does not define forward", ``get_decoder``,
``can_generate``, ``tie_weights``, ``name_or_path`` AttributeErrors): the decoder's states
against transformers' base model (1e-5; padded rows on their real tokens), dense and
MoE; a deep copy's decoder runs the copy's weights."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch, transformers


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def trio(request, tmp_path_factory):
    folder, ref = make_checkpoint(tmp_path_factory.mktemp(request.param), request.param)
    return ref, from_pretrained(folder), folder


def test_last_hidden_state_as_transformers(trio):
    ref, model, _ = trio
    ids = torch.tensor(random_ids(model.config.vocab_size, (2, 7), seed=2))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    with torch.no_grad():
        want = ref.model(ids).last_hidden_state.numpy()
        want_pad = ref.model(ids, attention_mask=mask).last_hidden_state.numpy()
        want_all = ref.model(ids, output_hidden_states=True).hidden_states
    dec = model.get_decoder()
    assert dec is model.model and ref.get_decoder() is ref.model
    out = dec(ids)
    tol = 1e-5 * np.abs(want).max()
    np.testing.assert_allclose(np.asarray(out.last_hidden_state.numpy()), want, atol=tol)
    np.testing.assert_allclose(np.asarray(out[0].numpy()), want, atol=tol)
    got_pad = np.asarray(model.model(input_ids=ids, attention_mask=mask)
                         .last_hidden_state.numpy())
    np.testing.assert_allclose(got_pad[0], want_pad[0], atol=tol)
    np.testing.assert_allclose(got_pad[1, 3:], want_pad[1, 3:], atol=tol)
    states = model.model(ids, output_hidden_states=True).hidden_states
    assert len(states) == len(want_all)
    np.testing.assert_allclose(np.asarray(states[1].numpy()), want_all[1].numpy(),
                               atol=1e-5 * np.abs(want_all[1].numpy()).max())


def test_small_methods_and_copies(trio):
    ref, model, folder = trio
    assert model.can_generate() is ref.can_generate() is True
    loaded = transformers.AutoModelForCausalLM.from_pretrained(folder)
    assert model.name_or_path == loaded.name_or_path == str(folder)
    model.tie_weights()
    ref.tie_weights()
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == \
        (ref.lm_head.weight is ref.model.embed_tokens.weight)
    ids = random_ids(model.config.vocab_size, (1, 5), seed=3)
    twin = copy.deepcopy(model)
    twin.model.norm.weight.data[...] *= 2  # the copy's decoder runs the copy's weights
    a = np.asarray(model.model(ids).last_hidden_state.numpy())
    b = np.asarray(twin.model(ids).last_hidden_state.numpy())
    np.testing.assert_allclose(b, 2 * a, rtol=1e-5, atol=1e-6)

"""DoRA adapters among several active ones (round 39, h6; round 38 refused them): peft's
layer runs the active adapters in the list's order on its running result, a plain one
adding ``s B A x``, a DoRA one scaling the result so far (its bias aside) and its own update
by ``m / ||W + s B A||`` (the norm of the base weight and its own pair only), so the order
matters where two DoRA adapters share a layer; its merge folds them in the same turn. skiff
(``lora.LoRALinear._forward_in_turn``) against peft 0.21 on the same adapters: logits,
greedy tokens, the merged model, one SGD step on the list (each adapter's magnitude
too); a checkpoint with biases and an MoE one."""

from __future__ import annotations

import numpy as np
import pytest

import skiff

from .ernie_reference import make_checkpoint, peft_pair, torch
from .ernie_reference import saved_adapter as _adapter

peft = pytest.importorskip("peft")
IDS = np.array([[5, 6, 7, 8, 9, 10, 11]])


@pytest.fixture(scope="module", params=["dense-mha-untied-bias", "moe-shared"])
def setup(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("dora39")
    folder, _ = make_checkpoint(d / "base", request.param)
    with skiff.random.fork_rng():
        skiff.manual_seed(0)
        trained = ("lora_B", "lora_magnitude_vector")  # magnitudes off ||W|| too
        paths = {"default": _adapter(folder, d / "a", ["q_proj", "v_proj"], 4, 0,
                                     use_dora=True, moved=trained),
                 "b": _adapter(folder, d / "b", ["k_proj", "o_proj", "q_proj"], 4, 1),
                 "c": _adapter(folder, d / "c", ["q_proj", "k_proj"], 4, 2, use_dora=True,
                               moved=trained)}
    return folder, paths


def _logits(pm, model):
    with torch.no_grad():
        want = pm(torch.tensor(IDS)).logits.numpy()
    return model(IDS).numpy(), want


@pytest.mark.parametrize("names", [["default", "b", "c"], ["c", "b", "default"], ["b", "c"]])
def test_dora_in_a_list_of_active_adapters_as_peft(setup, names):
    pm, model = peft_pair(*setup)
    for m in (pm.base_model, model):
        m.set_adapter(names)
    got, want = _logits(pm, model)
    np.testing.assert_allclose(got, want, atol=5e-5)
    with torch.no_grad():
        tokens = pm.generate(input_ids=torch.tensor(IDS), max_new_tokens=5, do_sample=False,
                             pad_token_id=0).numpy()
    np.testing.assert_array_equal(model.generate(IDS, max_new_tokens=5), tokens)
    pm.base_model.set_adapter(list(reversed(names)))
    with torch.no_grad():  # the order matters (two DoRA adapters share q_proj)
        assert np.abs(pm(torch.tensor(IDS)).logits.numpy() - want).max() > 1e-3
    with torch.no_grad():
        pm.base_model.set_adapter(names)
        merged = pm.merge_and_unload()(torch.tensor(IDS)).logits.numpy()
    np.testing.assert_allclose(merged, want, atol=1e-4)  # peft's merge: its forward
    np.testing.assert_allclose(model.merge_and_unload()(IDS).numpy(), merged, atol=1e-4)


def test_one_step_on_a_list_with_dora_as_peft(setup):
    pm, model = peft_pair(*setup)
    names = ["c", "b", "default"]
    for m in (pm.base_model, model):
        m.set_adapter(names)
    assert model.get_nb_trainable_parameters() == pm.get_nb_trainable_parameters()
    loss_t = pm(torch.tensor(IDS), labels=torch.tensor(IDS)).loss
    loss_t.backward()
    out = model(IDS, labels=IDS)
    out.loss.backward()
    np.testing.assert_allclose(out.loss.item(), loss_t.item(), rtol=1e-5)
    theirs = {n.removeprefix("base_model.model."): p.grad.numpy()
              for n, p in pm.named_parameters() if p.grad is not None}
    mine = {n: p.grad.numpy() for n, p in model.named_parameters()
            if p.requires_grad and p.grad is not None}
    magnitudes = [n for n in theirs if "lora_magnitude_vector" in n]
    assert {n.split(".")[-2] for n in magnitudes} == {"c", "default"}  # both trained
    for name, g in theirs.items():  # peft: ...q_proj.lora_B.c.weight / ..magnitude_vector.c.weight
        key = _skiff_name(name, names, theirs)
        scale = np.abs(g).max() + 1e-12
        np.testing.assert_allclose(mine[key], g, atol=1e-4 * scale, err_msg=name)


def _skiff_name(peft_name: str, names, grads) -> str:
    """skiff's parameter name of peft's ``<layer>.<kind>.<adapter>.weight``: the layer's
    first adapter of the list (its own, ``<layer>.<kind>.weight``, the magnitude
    ``<layer>.lora_magnitude_vector``) or another's pair on it
    (``<layer>.also.<adapter>.<kind>.weight``)."""
    head, kind, adapter, _ = peft_name.rsplit(".", 3)
    owner = next(n for n in names if f"{head}.lora_A.{n}.weight" in grads)
    tail = "lora_magnitude_vector" if kind == "lora_magnitude_vector" else f"{kind}.weight"
    return f"{head}.{tail}" if adapter == owner else f"{head}.also.{adapter}.{tail}"


@pytest.mark.parametrize("names, kind, kw", [
    (["default", "b"], "svd", {}), (["default", "c"], "linear", {}),
    (["b", "c"], "cat", {}), (["c", "default"], "ties", dict(density=0.5)),
])
def test_weighted_mix_of_dora_adapters_as_peft(setup, names, kind, kw):
    """peft's ``add_weighted_adapter`` mixes a DoRA adapter's ``A`` and ``B`` alone (round
    38 refused them here): the new adapter is DoRA when the first is, its magnitude its own
    init (the row norms of ``W``), not any adapter's trained one."""
    pm, model = peft_pair(*setup)
    name = f"{kind}-{'-'.join(names)}"
    for m in (pm, model):
        m.add_weighted_adapter(names, [0.7, 0.6], name, kind, **kw)
        m.set_adapter(name)
    assert model.peft_config[name].get("use_dora") == pm.peft_config[name].use_dora \
        == (names[0] != "b")
    got, want = _logits(pm, model)
    np.testing.assert_allclose(got, want, atol=5e-5)
    for m in (pm, model):
        m.set_adapter(names[0])
    assert np.abs(_logits(pm, model)[1] - want).max() > 1e-3  # the mix is not its first

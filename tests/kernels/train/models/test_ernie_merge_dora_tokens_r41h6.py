"""peft's ``merge_adapter()`` / ``unmerge_adapter()`` for DoRA adapters and trained token
rows (round 41, h6; refused with one line in round 40): checked against peft's model of
the same checkpoint with the same adapters. DoRA: the rows rescaled by ``m / ||W + s B
A||`` (the norm of the weight without the adapters merged before it), a plain and a
second DoRA adapter merged after it, a list of active adapters, the weights restored by
the unmerge. Trainable tokens: the trained rows written into the (tied) table and put
back."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from .ernie_reference import make_checkpoint, peft_pair, random_ids, saved_adapter, torch

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module", autouse=True)
def _torch_rng_kept():
    state = torch.get_rng_state()
    yield
    torch.set_rng_state(state)


IDS = random_ids(80, (2, 7), seed=41)
DORA = ("lora_B", "lora_magnitude_vector")


@pytest.fixture(scope="module")
def dora(tmp_path_factory):
    d = tmp_path_factory.mktemp("merge_dora")
    make_checkpoint(d / "base", "dense-mha-untied-bias")
    paths = {"default": saved_adapter(d / "base", d / "a", ["q_proj", "v_proj"], 4, 1,
                                      moved=DORA, use_dora=True),
             "b": saved_adapter(d / "base", d / "b", ["q_proj", "o_proj"], 2, 2),
             "c": saved_adapter(d / "base", d / "c", ["q_proj", "k_proj"], 2, 3,
                                moved=DORA, use_dora=True)}
    return d / "base", paths


def _peft(pm, ids=IDS):
    with torch.no_grad():
        return pm(torch.tensor(ids)).logits.numpy()


def _ours(model, ids=IDS):
    return np.asarray(model(ids).numpy())


def _weights(model):
    return {n: p.numpy().copy() for n, p in model.named_parameters() if "lora" not in n}


def _close(got, want, what):
    np.testing.assert_allclose(got, want, atol=1e-5 * float(np.abs(want).max()), err_msg=what)


def test_dora_merges_and_unmerges_as_peft(dora):
    base, paths = dora
    pm, model = peft_pair(base, paths)
    before, w0 = _ours(model), _weights(model)
    prompt = IDS[:1, :5]
    text = np.asarray(model.generate(prompt, max_new_tokens=6, do_sample=False))
    model.merge_adapter()
    pm.merge_adapter()
    q = model.model.layers[0].self_attn.q_proj
    assert q.merged_adapters == ["default"]
    _close(_ours(model), _peft(pm), "DoRA merged vs peft")
    _close(_ours(model), before, "DoRA merged vs its adapter")
    assert np.abs(q.weight.numpy() - w0["model.layers.0.self_attn.q_proj.weight"]).max() > 1e-3
    assert np.array_equal(np.asarray(model.generate(prompt, max_new_tokens=6,
                                                    do_sample=False)), text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("b", "c"):  # a plain one, then a DoRA one whose norm is of the base W
            model.merge_adapter([name])
            pm.merge_adapter([name])
            _close(_ours(model), _peft(pm), f"+ {name} merged vs peft")
    model.unmerge_adapter()
    pm.unmerge_adapter()
    _close(_ours(model), before, "unmerged")
    for n, w in _weights(model).items():
        np.testing.assert_allclose(w, w0[n], rtol=0, atol=1e-6, err_msg=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.set_adapter(["c", "default", "b"])
        pm.base_model.set_adapter(["c", "default", "b"])
    listed = _peft(pm)
    model.merge_adapter()
    pm.merge_adapter()
    _close(_ours(model), _peft(pm), "a list with two DoRA adapters merged")
    _close(_ours(model), listed, "a list merged vs unmerged")
    with model.disable_adapter(), pm.disable_adapter():  # unmerges, as peft
        _close(_ours(model), _peft(pm), "disabled while merged")
    _close(_ours(model), listed, "after the block")


def test_dora_merged_checkpoint_and_safe_merge(dora, tmp_path):
    import skiff
    from skiff.kernels.train.models import from_pretrained

    base, paths = dora
    model = from_pretrained(base)
    model.load_adapter(paths["default"])
    adapted = _ours(model)
    model.merge_adapter()
    skiff.models.save_pretrained(model, tmp_path / "full")  # folded once
    _close(_ours(from_pretrained(tmp_path / "full")), adapted, "merged checkpoint")
    model.unmerge_adapter()
    w0 = _weights(model)
    model.model.layers[1].self_attn.v_proj.lora_magnitude_vector._data[0] = np.inf
    with pytest.raises(ValueError, match="NaNs detected"):
        model.merge_adapter(safe_merge=True)
    assert not model.model.layers[0].self_attn.q_proj.merged
    for n, w in _weights(model).items():
        assert np.array_equal(w, w0[n]), n


def test_trainable_tokens_merge_as_peft(tmp_path):
    """The trained rows replace the table's (the tied head reads them too), as peft's
    ``TrainableTokensLayer.merge``; unmerged, the original rows are back."""
    make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    path = saved_adapter(tmp_path / "base", tmp_path / "tok", ["q_proj"], 2, 5,
                         moved=("lora_B", "trainable_tokens"), trainable_token_indices=[3, 7])
    pm, model = peft_pair(tmp_path / "base", {"default": path})
    ids = IDS.copy()
    ids[0, 2], ids[1, 4] = 3, 7
    before, w0 = _ours(model, ids), _weights(model)
    _close(before, _peft(pm, ids), "adapter")
    model.merge_adapter()
    pm.merge_adapter()
    emb = model.model.embed_tokens
    assert emb.merged_adapters == ["default"]
    table = emb.weight.numpy()
    want = pm.base_model.model.model.embed_tokens.token_adapter.base_layer.weight
    np.testing.assert_allclose(table, want.detach().numpy(), rtol=0, atol=1e-6)
    assert np.abs(table[[3, 7]] - w0["model.embed_tokens.weight"][[3, 7]]).max() > 1e-2
    _close(_ours(model, ids), _peft(pm, ids), "tokens merged vs peft")
    _close(_ours(model, ids), before, "tokens merged vs the adapter")
    model.unmerge_adapter()
    pm.unmerge_adapter()
    assert not emb.merged_adapters
    _close(_ours(model, ids), _peft(pm, ids), "tokens unmerged")
    for n, w in _weights(model).items():  # the table's rows exactly: written back
        np.testing.assert_allclose(w, w0[n], rtol=0, atol=0 if "embed" in n else 1e-6,
                                   err_msg=n)


def test_dora_with_dropout_as_peft(dora, tmp_path):
    """A DoRA adapter with ``lora_dropout`` (peft's DoRA recipes set 0.05-0.1) was refused
    ("not supported here"), its saved adapter too. Eval: the dropout is off; training: the
    same fixed dropout mask put in both models, logits and gradients as peft's."""
    from skiff.kernels.train.core import nn
    from skiff.kernels.train.core.tensor import Tensor

    base, _ = dora
    path = saved_adapter(base, tmp_path / "dd", ["q_proj", "v_proj"], 4, 6, moved=DORA,
                         use_dora=True, dropout=0.1)
    import peft

    from skiff.kernels.train.models import from_pretrained

    pm = peft.PeftModel.from_pretrained(transformers.AutoModelForCausalLM.from_pretrained(
        base), path, is_trainable=True).eval()
    model = from_pretrained(base)
    model.load_adapter(path, is_trainable=True)  # in training mode, as peft's
    model.eval()
    _close(_ours(model), _peft(pm), "eval")
    mask = np.random.default_rng(0).random((2, 7, 32))  # hidden size 32
    mask = ((mask > 0.3) / 0.7).astype(np.float32)

    class Fixed(nn.Module):
        def forward(self, x):
            return x * Tensor(mask[..., :x.shape[-1]])

    class FixedT(torch.nn.Module):
        def forward(self, x):
            return x * torch.from_numpy(mask[..., :x.shape[-1]])

    pairs = []
    for i, layer in enumerate(model.model.layers):
        for name in ("q_proj", "v_proj"):
            getattr(layer.self_attn, name).dropout = Fixed()
            theirs = getattr(pm.base_model.model.model.layers[i].self_attn, name)
            theirs.lora_dropout["default"] = FixedT()
            pairs.append((getattr(layer.self_attn, name), theirs))
    model.train()
    pm.train()
    weights = np.random.default_rng(1).normal(size=(2, 7, 96)).astype(np.float32)
    out = model(IDS)
    (out * Tensor(weights)).sum().backward()
    ref = pm(torch.tensor(IDS)).logits
    (ref * torch.from_numpy(weights)).sum().backward()
    _close(np.asarray(out.numpy()), ref.detach().numpy(), "training logits")
    for ours, theirs in pairs:
        for got, want in ((ours.lora_B.weight.grad, theirs.lora_B["default"].weight.grad),
                          (ours.lora_magnitude_vector.grad,
                           theirs.lora_magnitude_vector["default"].weight.grad)):
            got = np.asarray(getattr(got, "numpy", lambda g=got: g)())
            want = want.numpy()
            np.testing.assert_allclose(got, want, atol=1e-4 * float(np.abs(want).max()))

"""peft's ``merge_adapter()`` / ``unmerge_adapter()`` (round 40, h14; were AttributeErrors):
the adapters folded into the weights in place and taken out again, checked against peft's
model of the same checkpoint with the same two adapters (``default`` active, ``b`` loaded):
logits while merged and after unmerging, the weights restored, the warnings, a second merge,
generation while merged, ``disable_adapter`` / ``set_adapter`` / ``merge_and_unload`` /
``unload`` / saving on a merged model, ``safe_merge`` (DoRA and trainable tokens: round 41,
``test_ernie_merge_dora_tokens_r41h6.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from .ernie_reference import make_checkpoint, peft_pair, random_ids, saved_adapter, torch


@pytest.fixture(scope="module", autouse=True)
def _torch_rng_kept():
    """peft draws its ``lora_A`` from torch's global generator: the files after this one
    see the draws they would see without it."""
    state = torch.get_rng_state()
    yield
    torch.set_rng_state(state)


@pytest.fixture(scope="module", params=["dense-mha-untied-bias", "moe-shared"])
def folders(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("merge_adapter")
    make_checkpoint(d / "base", request.param)
    a = saved_adapter(d / "base", d / "a", ["q_proj", "v_proj"], 4, 1)
    b = saved_adapter(d / "base", d / "b", ["q_proj", "o_proj"], 2, 2)
    return d / "base", {"default": a, "b": b}


IDS = random_ids(80, (2, 7), seed=41)


def _peft(pm):
    with torch.no_grad():
        return pm(torch.tensor(IDS)).logits.numpy()


def _ours(model):
    return np.asarray(model(IDS).numpy())


def _weights(model):
    return {n: p.numpy().copy() for n, p in model.named_parameters() if "lora" not in n}


def _messages(fn):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in seen]


def _close(got, want, what):
    np.testing.assert_allclose(got, want, atol=1e-5 * float(np.abs(want).max()), err_msg=what)


def test_merge_unmerge_as_peft(folders):
    base, paths = folders
    pm, model = peft_pair(base, paths)
    before, w0 = _ours(model), _weights(model)
    _close(before, _peft(pm), "unmerged")
    prompt = IDS[:1, :5]
    text = np.asarray(model.generate(prompt, max_new_tokens=6, do_sample=False))
    model.merge_adapter()
    pm.merge_adapter()
    _close(_ours(model), before, "merged vs the adapter's")
    _close(_ours(model), _peft(pm), "merged vs peft")
    q = model.model.layers[0].self_attn.q_proj
    assert q.merged_adapters == ["default"]
    changed = [n for n in w0 if np.abs(w0[n] - _weights(model)[n]).max() > 1e-4]
    assert changed and all(("q_proj" in n or "v_proj" in n) for n in changed), changed
    assert np.array_equal(np.asarray(model.generate(prompt, max_new_tokens=6,
                                                    do_sample=False)), text)
    assert _messages(model.merge_adapter) == ["All adapters are already merged, nothing to do."]
    _close(_ours(model), before, "merged twice")
    assert _messages(lambda: model.merge_adapter(["b"])) == [
        "Already following adapters were merged default. You are now additionally merging b."]
    pm.merge_adapter(["b"])
    _close(_ours(model), _peft(pm), "default + b merged")
    model.unmerge_adapter()
    pm.unmerge_adapter()
    _close(_ours(model), before, "unmerged")
    w1 = _weights(model)
    for n in w0:
        np.testing.assert_allclose(w1[n], w0[n], rtol=0, atol=1e-6, err_msg=n)
    assert _messages(model.unmerge_adapter) == ["Already unmerged. Nothing to do."]
    assert np.array_equal(np.asarray(model.generate(prompt, max_new_tokens=6,
                                                    do_sample=False)), text)
    model.merge_adapter(adapter_names=["b"])  # not active: its layers give base + b (peft)
    pm.merge_adapter(adapter_names=["b"])
    only_b = _ours(model)
    _close(only_b, _peft(pm), "b merged, default active")
    assert np.abs(only_b - before).max() > 1e-2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.set_adapter(["default", "b"])  # both active: both merged, then out again
        pm.base_model.set_adapter(["default", "b"])
    both = _peft(pm)
    model.merge_adapter()
    pm.merge_adapter()
    _close(_ours(model), both, "a list merged")
    model.unmerge_adapter()
    _close(_ours(model), both, "a list unmerged")


def test_calls_on_a_merged_model(folders, tmp_path):
    import peft
    import transformers

    import skiff
    from skiff.kernels.train.models import from_pretrained

    base, paths = folders
    pm, model = peft_pair(base, paths)
    adapted = _ours(model)
    model.merge_adapter()
    pm.merge_adapter()
    with model.disable_adapter(), pm.disable_adapter():
        _close(_ours(model), _peft(pm), "disabled while merged")
    assert not model.model.layers[0].self_attn.q_proj.merged  # peft unmerges a disabled layer
    _close(_ours(model), adapted, "after the block")
    model.merge_adapter()
    # saving while merged: the adapter as it is (peft), the merged checkpoint folded once
    model.save_pretrained(tmp_path / "adapter")
    skiff.models.save_pretrained(model, tmp_path / "full")
    _close(_ours(from_pretrained(tmp_path / "full")), adapted, "merged checkpoint")
    ref = transformers.AutoModelForCausalLM.from_pretrained(base).eval()
    _close(_peft(peft.PeftModel.from_pretrained(ref, tmp_path / "adapter").eval()), adapted,
           "adapter saved while merged")
    assert "Unmerging the model first" in " ".join(_messages(lambda: model.set_adapter("b")))
    assert not model.model.layers[0].self_attn.q_proj.merged
    pm.unmerge_adapter()
    pm.set_adapter("b")
    _close(_ours(model), _peft(pm), "b active after the unmerge")
    model.set_adapter("default")
    pm.set_adapter("default")
    model.merge_adapter()
    pm.merge_adapter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        merged = model.merge_and_unload(adapter_names=["b"])  # default stays in, b added
        want = _peft(pm.merge_and_unload(adapter_names=["b"]))
    _close(np.asarray(merged(IDS).numpy()), want, "merge_and_unload on a merged model")
    pm, model = peft_pair(base, paths)
    model.merge_adapter()
    pm.merge_adapter()
    plain = model.unload()  # peft: the merged weights stay
    _close(np.asarray(plain(IDS).numpy()), _peft(pm.unload()), "unload while merged")
    _close(np.asarray(plain(IDS).numpy()), adapted, "unload while merged, ours")


def test_expert_adapters_merge_as_peft(tmp_path):
    """An MoE model's expert adapters (peft's ``target_parameters``): each expert's gate, up
    and down weights get their slice, generation reads the merged experts."""
    make_checkpoint(tmp_path / "base", "moe-shared")
    path = saved_adapter(tmp_path / "base", tmp_path / "e", ["q_proj", "experts.gate_up_proj",
                                                             "experts.down_proj"], 2, 4)
    pm, model = peft_pair(tmp_path / "base", {"default": path})
    before, w0 = _ours(model), _weights(model)
    text = np.asarray(model.generate(IDS[:1, :5], max_new_tokens=6, do_sample=False))
    model.merge_adapter()
    pm.merge_adapter()
    _close(_ours(model), before, "experts merged")
    _close(_ours(model), _peft(pm), "experts merged vs peft")
    moved = {n.rpartition(".")[0].rpartition(".")[2] for n in w0
             if np.abs(w0[n] - _weights(model)[n]).max() > 1e-4}
    assert {"gate_proj", "up_proj", "down_proj", "q_proj"} <= moved, moved
    assert np.array_equal(np.asarray(model.generate(IDS[:1, :5], max_new_tokens=6,
                                                    do_sample=False)), text)
    model.unmerge_adapter()
    for n, w in _weights(model).items():
        np.testing.assert_allclose(w, w0[n], rtol=0, atol=1e-6, err_msg=n)
    _close(_ours(model), before, "experts unmerged")
    model.merge_adapter()
    import skiff

    skiff.models.merge_lora(model)  # folds what is not merged yet: nothing twice
    _close(_ours(model), before, "merge_lora on a merged model")
    assert not model.__dict__.get("_lora_merged")


def test_safe_merge_finds_a_broken_adapter(folders):
    from skiff.kernels.train.models import from_pretrained

    base, paths = folders
    model = from_pretrained(base)
    model.load_adapter(paths["default"])
    w0 = _weights(model)
    model.model.layers[0].self_attn.v_proj.lora_B.weight._data[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaNs detected"):
        model.merge_adapter(safe_merge=True)
    assert not model.model.layers[0].self_attn.q_proj.merged
    for n, w in _weights(model).items():
        assert np.array_equal(w, w0[n]), n

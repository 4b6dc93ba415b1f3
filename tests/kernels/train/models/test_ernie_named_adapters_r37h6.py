"""Several named LoRA adapters on one model (round 37, h6; round 36 held one, "default"):
``load_adapter(DIR, adapter_name=)``, ``set_adapter``, ``delete_adapter``,
``add_weighted_adapter`` (cat, linear, svd), ``disable_adapter()``, ``merge_and_unload`` and
``save_pretrained`` of them all, each against peft's ``PeftModel`` on the same adapters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import skiff
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch, transformers
from .ernie_reference import saved_adapter as _adapter

peft = pytest.importorskip("peft")
IDS = np.array([[5, 6, 7, 8, 9, 10, 11]])

# skiff's float32 logits against peft's (round 48 h9): the last position's logits under the
# rank-2 rsLoRA adapter "b" carry float32 noise from hidden states far larger than the logits
# (|logits| up to 8): 1e-5 to 2.4e-5 apart here, 5.3e-5 with OpenBLAS's Sandybridge kernels,
# ATen's default ones and numpy without AVX2 together (past the 5e-5 this file used); 1e-4
# of the largest logit, 8e-4, keeps 15x over that, far under what an adapter changes
ATOL = 8e-4


@pytest.fixture(scope="module", params=["dense-gqa-tied", "moe-shared"])
def setup(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("named37")
    folder, _ = make_checkpoint(d / "base", request.param)
    moe = request.param.startswith("moe")
    # apply_lora draws lora_A from skiff's generator: seeded here (and restored after), the
    # adapters no longer depend on what ran before in the worker (round 38: under -n 2 the
    # DPO-like step's data, and so its float32 rounding, changed with the tests' order)
    with skiff.random.fork_rng():
        skiff.manual_seed(0)
        paths = {"default": _adapter(folder, d / "a", ["q_proj", "v_proj"], 4, 0),
                 "b": _adapter(folder, d / "b", ["k_proj", "o_proj"] + (
                     ["experts.gate_up_proj", "experts.down_proj"] if moe else ["down_proj"]),
                     2, 1, use_rslora=True),
                 "c": _adapter(folder, d / "c", ["q_proj", "k_proj"], 4, 2)}
    return folder, paths, moe


def _skiff(setup):
    """skiff's model with the three adapters (round 43: the tests that compare nothing with
    peft's model no longer build it)."""
    folder, paths, _ = setup
    model = from_pretrained(folder)
    model.load_adapter(paths["default"])
    for name in ("b", "c"):
        model.load_adapter(paths[name], adapter_name=name)
    return model


def _pair(setup):
    folder, paths, _ = setup
    base = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    pm = peft.PeftModel.from_pretrained(base, paths["default"]).eval()
    for name in ("b", "c"):
        pm.load_adapter(paths[name], adapter_name=name)
    return pm, _skiff(setup)


def _same(pm, model, tokens=True):
    with torch.no_grad():
        want = pm(torch.tensor(IDS)).logits.numpy()
        wg = pm.generate(input_ids=torch.tensor(IDS), max_new_tokens=6, do_sample=False,
                         pad_token_id=0).numpy() if tokens else None
    np.testing.assert_allclose(model(IDS).numpy(), want, atol=ATOL)
    if tokens:
        np.testing.assert_array_equal(model.generate(IDS, max_new_tokens=6), wg)
    assert model.active_adapter == pm.active_adapter


def test_switch_disable_delete_and_merge_as_peft(setup):
    pm, model = _pair(setup)
    assert list(model.peft_config) == list(pm.peft_config) == ["default", "b", "c"]
    _same(pm, model, tokens=False)  # loading others leaves the active one
    for name in ("b", "c", "default", "b"):
        pm.set_adapter(name)
        model.set_adapter(name)
        _same(pm, model, tokens=name == "c")
        trained = {n for n, p in model.named_parameters() if p.requires_grad}
        assert trained and all(".lora_" in n for n in trained)
    with pm.disable_adapter(), model.disable_adapter():
        _same(pm, model, tokens=False)
    with pytest.raises(ValueError, match=r"Adapter with name x not found. Please pass the "
                                         r"correct adapter name among \['default', 'b', 'c'\]"):
        model.set_adapter("x")
    with pytest.raises(ValueError, match="already exists"):
        model.load_adapter(setup[1]["c"], adapter_name="c")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pm.delete_adapter("b")
        model.delete_adapter("b")
    said = [str(w.message) for w in seen if "was active" in str(w.message)]
    assert "Adapter b was active which is now deleted. Setting active adapter to c." in said
    assert model.active_adapter == pm.active_adapter == "c"
    # peft picks per layer: v_proj (default's alone) falls back to default while the model
    # says c; skiff makes c wholly active, as peft's set_adapter("c") then gives
    pm.set_adapter("c")
    _same(pm, model, tokens=False)
    assert model.active_adapters() == ["c"] and list(model.peft_config) == ["default", "c"]
    with torch.no_grad():
        want = pm.merge_and_unload()(torch.tensor(IDS)).logits.numpy()
    merged = model.merge_and_unload()
    np.testing.assert_allclose(merged(IDS).numpy(), want, atol=ATOL)
    with pytest.raises(ValueError, match="No adapter loaded"):
        merged.set_adapter("default")


def test_save_pretrained_writes_each_adapter_as_peft(setup, tmp_path):
    folder = setup[0]
    model = _skiff(setup)
    model.set_adapter("c")
    written = model.save_pretrained(tmp_path / "all")
    assert sorted(written) == sorted(["adapter_model.safetensors", "adapter_config.json"] + [
        f"{n}/{f}" for n in "bc" for f in ("adapter_model.safetensors", "adapter_config.json")])
    assert model.active_adapter == "c"
    for name in ("default", "b", "c"):
        base = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
        pm = peft.PeftModel.from_pretrained(
            base, tmp_path / "all" if name == "default" else tmp_path / "all" / name).eval()
        model.set_adapter(name)
        with torch.no_grad():
            want = pm(torch.tensor(IDS)).logits.numpy()
        np.testing.assert_allclose(model(IDS).numpy(), want, atol=ATOL)


@pytest.mark.parametrize("args", [
    (["default", "b"], [0.7, -0.4], "cat1", "cat"),
    (["default", "c"], [0.5, 0.5], "lin", "linear"),
    (["default", "b", "c"], [1.0, 0.5, 0.3], "svd1", "svd"),
    (["default", "b"], [1.0, 1.0], "svd2", "svd", 3),
    (["c"], [2.0], "one", "cat"),
])
def test_add_weighted_adapter_as_peft(setup, args):
    pm, model = _pair(setup)
    if setup[2] and "b" in args[0]:  # experts are nn.Parameter targets in peft: both refuse
        with pytest.raises(ValueError, match="does not support targeting nn.Parameter"):
            pm.add_weighted_adapter(*args)
        with pytest.raises(ValueError, match="does not support targeting nn.Parameter"):
            model.add_weighted_adapter(*args)
        return
    pm.add_weighted_adapter(*args)
    model.add_weighted_adapter(*args)
    assert model.active_adapter == pm.active_adapter == "default"
    assert model.peft_config[args[2]]["r"] == pm.peft_config[args[2]].r
    pm.set_adapter(args[2])
    model.set_adapter(args[2])
    _same(pm, model, tokens=False)


def test_unsupported_mixes_say_so(setup):
    model = _skiff(setup)
    with pytest.raises(ValueError, match="nn.Parameter" if setup[2] else "same r value"):
        model.add_weighted_adapter(["default", "b"], [1, 1], "x", "linear")
    with pytest.raises(ValueError, match="Invalid combination_type: foo"):
        model.add_weighted_adapter(["default", "c"], [1, 1], "x", "foo")
    with pytest.raises(ValueError, match="svd_clamp"):
        model.add_weighted_adapter(["default", "c"], [1, 1], "x", svd_clamp=0.9)
    with pytest.raises(ValueError, match="Adapter zz does not exist"):
        model.add_weighted_adapter(["zz"], [1], "x")
    with pytest.raises(ValueError, match="Adapter with name zz not found"):
        model.set_adapter(["default", "zz"])


def test_add_adapter_from_a_lora_config(setup):
    folder, paths, _ = setup
    model = from_pretrained(folder)
    base = model(IDS).numpy()
    cfg = peft.LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "o_proj"])
    model.add_adapter(cfg, adapter_name="sft")  # transformers' order: made active
    assert model.active_adapters() == ["sft"] and model.peft_config["sft"]["r"] == 2
    np.testing.assert_allclose(model(IDS).numpy(), base, atol=1e-6)  # B starts at zero
    model.load_adapter(paths["c"], adapter_name="c")
    model.add_adapter("dpo", cfg)  # peft's order: the active one stays
    assert list(model.peft_config) == ["sft", "c", "dpo"] and model.active_adapter == "sft"
    model.set_adapter("c")
    pm = peft.PeftModel.from_pretrained(
        transformers.AutoModelForCausalLM.from_pretrained(folder).eval(), paths["c"]).eval()
    with torch.no_grad():
        want = pm(torch.tensor(IDS)).logits.numpy()
    np.testing.assert_allclose(model(IDS).numpy(), want, atol=ATOL)
    with pytest.raises(ValueError, match="Adapter with name dpo already exists"):
        model.add_adapter(cfg, adapter_name="dpo")
    model.merge_and_unload()
    with pytest.raises(ValueError, match="No adapter loaded"):
        model.active_adapters()
    named = from_pretrained(folder).load_adapter(paths["c"], adapter_name="mine")
    assert named.active_adapters() == ["mine"]


def test_switching_keeps_parameters_and_the_disabled_state(setup):
    folder, paths, _ = setup
    model = from_pretrained(folder)
    base = model(IDS).numpy()
    model.load_adapter(paths["default"])
    model.load_adapter(paths["c"], adapter_name="c")
    before = {n: p for n, p in model.named_parameters() if p.requires_grad}
    with_default = model(IDS).numpy()
    model.set_adapter("c")
    now = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert not any(now[n] is before[n] for n in set(now) & set(before))  # c's own
    model.set_adapter("default")
    after = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert after.keys() == before.keys() and all(after[n] is before[n] for n in before)
    model.disable_adapters()
    model.set_adapter("c")  # still off, as peft's disabled layers stay off
    np.testing.assert_allclose(model(IDS).numpy(), base, atol=1e-6)
    model.enable_adapters()
    model.set_adapter("default")
    np.testing.assert_allclose(model(IDS).numpy(), with_default, atol=1e-6)


def test_counts_and_configs_read_as_peft(setup):
    pm, model = _pair(setup)
    for name in ("default", "b"):
        pm.set_adapter(name)
        model.set_adapter(name)
        assert model.get_nb_trainable_parameters() == pm.get_nb_trainable_parameters()
    assert model.peft_config["c"].r == pm.peft_config["c"].r == 4
    assert set(model.peft_config["c"].target_modules) == set(pm.peft_config["c"].target_modules)


def test_a_parked_adapter_follows_model_to(setup):
    folder, paths, _ = setup
    model = from_pretrained(folder)
    model.load_adapter(paths["default"])
    model.load_adapter(paths["c"], adapter_name="c")
    model.to(dtype="float64")
    model.set_adapter("c")
    assert {str(p.dtype) for p in model.parameters()} == {"float64"}
    pm = peft.PeftModel.from_pretrained(
        transformers.AutoModelForCausalLM.from_pretrained(folder).eval(), paths["c"]).eval()
    with torch.no_grad():
        want = pm(torch.tensor(IDS)).logits.numpy()
    np.testing.assert_allclose(model(IDS).numpy(), want, atol=ATOL)


def test_a_reference_adapter_in_a_dpo_like_step(setup):
    """TRL's ``ref_adapter_name`` flow: the reference log-probs under one adapter, the
    policy's loss and gradients under another; gradients equal peft's."""
    from skiff.kernels.train.core.nn import functional as F
    from skiff.kernels.train.core.tensor import Tensor

    folder, paths, _ = setup
    pm = peft.PeftModel.from_pretrained(transformers.AutoModelForCausalLM.from_pretrained(
        folder), paths["default"], adapter_name="policy", is_trainable=True)
    pm.load_adapter(paths["c"], adapter_name="ref")
    model = from_pretrained(folder)
    model.load_adapter(paths["default"], adapter_name="policy", is_trainable=True)
    model.load_adapter(paths["c"], adapter_name="ref")
    pm.set_adapter("ref")
    model.set_adapter("ref")
    with torch.no_grad():
        ref_t = torch.log_softmax(pm(torch.tensor(IDS)).logits, -1)
    ref_s = Tensor(F.log_softmax(model(IDS), axis=-1).numpy())
    pm.set_adapter("policy")
    model.set_adapter("policy")
    lp_t = torch.log_softmax(pm(torch.tensor(IDS)).logits, -1)
    (((lp_t - ref_t).exp() * lp_t).sum() / 100).backward()
    lp_s = F.log_softmax(model(IDS), axis=-1)
    (((lp_s - ref_s).exp() * lp_s).sum() / 100).backward()
    want = {n.replace("base_model.model.", "").replace(".policy.", "."): p.grad.numpy()
            for n, p in pm.named_parameters() if p.grad is not None}
    got = {n: p.grad.numpy() for n, p in model.named_parameters() if p.grad is not None}
    assert got.keys() == want.keys()
    # float32 noise: an element's rounding follows the terms summed into it (up to the
    # largest gradient), not its own size; torch's float32 gradients themselves differ from a
    # float64 run by up to 4.6e-5 x max|g| (skiff's by 1.3e-5; 10 adapter draws,
    # /work/round38/h6/dpo_f64.py), so the two float32 runs are held to 1e-4 x max|g|
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-4, atol=1e-4 * np.abs(want[n]).max())


def test_unload_gives_the_base_model_back(setup):
    folder, paths, _ = setup
    model = from_pretrained(folder)
    base = model(IDS).numpy()
    model.load_adapter(paths["default"])
    model.load_adapter(paths["c"], adapter_name="c")
    assert np.abs(model(IDS).numpy() - base).max() > 1e-3
    assert model.unload() is model
    np.testing.assert_allclose(model(IDS).numpy(), base, atol=1e-6)
    with pytest.raises(ValueError, match="No adapter loaded"):
        model.active_adapters()


def test_adapters_with_saved_modules_stay_alone(setup, tmp_path):
    folder, paths, _ = setup
    m = from_pretrained(folder)
    skiff.models.apply_lora(m, r=2, target_modules=["q_proj"], modules_to_save=["lm_head"])
    skiff.models.save_adapter(m, tmp_path / "mts")
    model = from_pretrained(folder)
    model.load_adapter(paths["c"])
    before = model(IDS).numpy()
    with pytest.raises(ValueError, match="adapter 'z' trains embedding rows or whole modules"):
        model.load_adapter(tmp_path / "mts", adapter_name="z")
    with pytest.raises(FileNotFoundError):
        model.load_adapter(tmp_path / "nope", adapter_name="z")
    assert list(model.peft_config) == ["default"]  # left as it was
    np.testing.assert_allclose(model(IDS).numpy(), before)
    other = from_pretrained(folder)
    other.load_adapter(tmp_path / "mts")
    with pytest.raises(ValueError, match="the model's adapter trains embedding rows"):
        other.load_adapter(paths["c"], adapter_name="c")


def test_set_adapter_inference_mode_freezes_as_peft(setup):
    pm, model = _pair(setup)
    for mode in (True, False):
        pm.set_adapter("c", inference_mode=mode)
        model.set_adapter("c", inference_mode=mode)
        assert model.get_nb_trainable_parameters() == pm.get_nb_trainable_parameters()
    assert model.get_nb_trainable_parameters()[0] > 0

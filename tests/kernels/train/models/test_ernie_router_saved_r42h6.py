"""An MoE router named in peft's ``modules_to_save`` (round 42, h6): fine-tuning ERNIE-4.5
MoE with the router trained whole (``modules_to_save=["gate"]``) saves transformers'
router module: its weight and its expert bias (``mlp.gate.moe_statics.
e_score_correction_bias``). skiff refused peft's adapter ("unexpected 2: ...
e_score_correction_bias") and wrote no bias in its own. Oracle: peft's model of the same
checkpoint (logits), peft's own adapter file (its keys).

peft's ``target_parameters`` given bare (``["gate_up_proj", "down_proj"]``, as peft's
``all-linear`` writes them on an MoE model) were read as linear layers no model has; now
the experts' fused weights. peft's LoRA on the router itself (``gate.weight``) was refused
with the reason (round 42); it loads since round 44 (h6), with peft's logits."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors import safe_open

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import load_adapter, save_adapter

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    where = tmp_path_factory.mktemp("r42h6-router") / "base"
    make_checkpoint(where, "moe-shared")
    return where


@pytest.mark.parametrize("names", [["gate"], ["mlp.gate", "lm_head"]])
def test_a_router_in_modules_to_save_loads_and_saves_as_peft(folder, tmp_path, names):
    base = transformers.AutoModelForCausalLM.from_pretrained(folder)
    torch.manual_seed(0)
    pm = peft.get_peft_model(base, peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj"], modules_to_save=names,
        init_lora_weights=False)).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # a trained router: other weights, other expert biases
        for n, p in pm.named_parameters():
            if ".modules_to_save." in n and ".mlp.gate." in n:
                p.add_(torch.randn(p.shape, generator=gen) * 0.5)
    pm.save_pretrained(tmp_path / "peft")
    ids = random_ids(base.config.vocab_size, (2, 10), seed=3)
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
    scale = np.abs(want).max()

    model = load_adapter(from_pretrained(folder), tmp_path / "peft")
    np.testing.assert_allclose(np.asarray(model(ids).numpy()), want, atol=1e-4 * scale)
    with pm.disable_adapter(), torch.no_grad():  # the router changed what the model says
        plain = pm(torch.tensor(ids)).logits.numpy()
    assert np.abs(plain - want).max() > 1e-2 * scale

    save_adapter(model, tmp_path / "mine")
    keys = {}
    for which in ("peft", "mine"):
        with safe_open(str(tmp_path / which / "adapter_model.safetensors"), "np") as f:
            keys[which] = {k: f.get_tensor(k) for k in f.keys()}
    assert sorted(keys["mine"]) == sorted(keys["peft"])
    for k, v in keys["peft"].items():
        np.testing.assert_allclose(keys["mine"][k], v, atol=1e-6, err_msg=k)
    again = peft.PeftModel.from_pretrained(
        transformers.AutoModelForCausalLM.from_pretrained(folder), tmp_path / "mine").eval()
    with torch.no_grad():
        np.testing.assert_allclose(again(torch.tensor(ids)).logits.numpy(), want,
                                   atol=1e-4 * scale)


def test_bare_expert_parameters_and_the_router_lora_load(folder, tmp_path):
    """peft's bare ``target_parameters`` (``gate_up_proj``, ``down_proj``) load; and (round
    44, h6: was refused) its LoRA on the router's weight (``gate.weight``, which peft's
    ``all-linear`` adds on an MoE): peft's logits."""
    base = transformers.AutoModelForCausalLM.from_pretrained(folder)
    torch.manual_seed(2)
    for name, params in (("bare", ["gate_up_proj", "down_proj"]),
                         ("router", ["gate_up_proj", "down_proj", "gate.weight"])):
        pm = peft.get_peft_model(base, peft.LoraConfig(
            r=4, lora_alpha=8, target_modules=["q_proj"], target_parameters=params,
            init_lora_weights=False)).eval()
        pm.save_pretrained(tmp_path / name)
        ids = random_ids(base.config.vocab_size, (2, 10), seed=3)
        with torch.no_grad():
            want = pm(torch.tensor(ids)).logits.numpy()
        base = pm.unload()  # the base model back, for the next config
        model = load_adapter(from_pretrained(folder), tmp_path / name)
        np.testing.assert_allclose(np.asarray(model(ids).numpy()), want,
                                   atol=1e-4 * np.abs(want).max(), err_msg=name)

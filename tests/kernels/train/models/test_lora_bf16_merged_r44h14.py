"""A LoRA fine-tune of a bfloat16 checkpoint written back merged in bfloat16 (round 44, h14).

A user fine-tunes a bfloat16 ERNIE-4.5 checkpoint (the published ones are) with
``--lora-r``: the job's ``hf-model`` (``save_pretrained`` of the LoRA model: merged) was
written in float32, twice the base's size, its ``config.json`` saying float32, so
transformers' ``from_pretrained`` (``dtype="auto"``) loaded a float32 model. A peft user's
``merge_and_unload()`` of the base as transformers loads it saves bfloat16. Now the merged
weights go back in the checkpoint's stored dtype (the float32 router kept, as transformers
keeps it). Oracle: peft's merge of the same adapter on transformers' bfloat16 base."""

from __future__ import annotations

import json
import warnings

import numpy as np

from .ernie_reference import build_reference, saved_adapter, torch, transformers


def test_lora_of_a_bf16_checkpoint_is_written_back_in_bf16(tmp_path):
    peft = __import__("pytest").importorskip("peft")
    from safetensors import safe_open

    from skiff.kernels.train.models import from_pretrained
    from skiff.kernels.train.models.hf_checkpoint import save_pretrained
    from skiff.kernels.train.models.lora import load_adapter

    base = tmp_path / "bf16"
    build_reference("moe-shared", seed=2).to(torch.bfloat16).save_pretrained(base)
    adapter = saved_adapter(base, tmp_path / "adapter", ["q_proj", "o_proj"], 2, seed=1)
    model = from_pretrained(base)
    load_adapter(model, adapter)
    save_pretrained(model, tmp_path / "merged")

    assert json.loads((tmp_path / "merged" / "config.json").read_text())["dtype"] == "bfloat16"
    with safe_open(str(tmp_path / "merged" / "model.safetensors"), "pt") as f:
        kinds = {k: f.get_tensor(k).dtype for k in f.keys()}
    assert kinds["model.layers.0.self_attn.q_proj.weight"] == torch.bfloat16
    assert kinds["model.layers.1.mlp.gate.weight"] == torch.float32  # as transformers keeps
    ids = torch.tensor(np.random.default_rng(0).integers(3, 80, (2, 9)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()
        theirs = peft.PeftModel.from_pretrained(
            transformers.AutoModelForCausalLM.from_pretrained(base), adapter).eval()
        theirs = theirs.merge_and_unload()
    assert mine.dtype == theirs.dtype == torch.bfloat16
    with torch.no_grad():
        a, b = mine(ids).logits.float(), theirs(ids).logits.float()
        plain = transformers.AutoModelForCausalLM.from_pretrained(base).eval()(ids).logits
    moved = (b - plain.float()).abs().max()
    assert (a - b).abs().max() <= 0.02 * moved, ((a - b).abs().max(), moved)

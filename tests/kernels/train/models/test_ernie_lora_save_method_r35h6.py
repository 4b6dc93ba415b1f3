"""``model.save_pretrained(DIR)`` on a LoRA model (round 35, h6): peft's ``PeftModel.
save_pretrained`` (and transformers' own method after ``add_adapter``) write the adapter
alone; skiff wrote the merged model there, so ``PeftModel.from_pretrained(base, DIR)`` found
no ``adapter_config.json``. Now the adapter, in peft's layout: peft reads it with the same
logits (LoRA on the MoE experts and a saved head, trained 3 steps); the merged model is
``model.merge_and_unload().save_pretrained(DIR, safe_serialization=True, max_shard_size=...)``
as with peft, read by transformers with peft's merged logits."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.optim import AdamW
from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")


def test_lora_save_method_writes_the_adapter(tmp_path):
    make_checkpoint(tmp_path / "base", "moe-shared")
    model = from_pretrained(tmp_path / "base")
    apply_lora(model, r=4, alpha=8, modules_to_save=["lm_head"],
               target_modules=["q_proj", "v_proj", "experts.gate_up_proj",
                               "experts.down_proj"])
    ids = random_ids(model.config.vocab_size, (2, 10), seed=2)
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(3):
        model(ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
    mine = model(ids).numpy()

    files = model.save_pretrained(tmp_path / "adapter", safe_serialization=True)
    assert sorted(f.rsplit("/", 1)[-1] for f in files if "adapter" in f) == \
        ["adapter_config.json", "adapter_model.safetensors"]
    assert not (tmp_path / "adapter" / "model.safetensors").exists()
    base = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "base")
    pm = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(mine, want, atol=5e-5)
    with pytest.raises(ValueError, match="merge_and_unload"):
        model.save_pretrained(tmp_path / "x", max_shard_size="20KB")

    merged = model.merge_and_unload()
    merged.save_pretrained(tmp_path / "merged", safe_serialization=True, max_shard_size="20KB")
    assert (tmp_path / "merged" / "model.safetensors.index.json").exists()
    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()
    with torch.no_grad():
        got = hf(torch.tensor(ids)).logits.numpy()
        peft_merged = pm.merge_and_unload()(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(got, peft_merged, atol=5e-5)
    np.testing.assert_allclose(from_pretrained(tmp_path / "merged")(ids).numpy(), mine,
                               atol=5e-5)

"""peft's ``use_rslora``, ``rank_pattern``, ``alpha_pattern``, ``use_dora``,
``layers_to_transform`` / ``layers_pattern``, ``exclude_modules`` and a target also in
``modules_to_save`` (round 28; ``load_adapter`` refused them, ``apply_lora`` had no such
options or refused the overlap): trained against peft's model by torch (the same trained
names), the adapter read by peft and peft's read by skiff, the merged folder by
transformers; the experts of an MoE model with rsLoRA too."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.core.optim import AdamW
from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.hf_checkpoint import save_pretrained
from skiff.kernels.train.models.lora import apply_lora, load_adapter, save_adapter

from .ernie_reference import make_checkpoint, random_ids, torch, transformers

peft = pytest.importorskip("peft")

PATTERNS = dict(rank_pattern={"q_proj": 2, "layers.1.self_attn.v_proj": 6},
                alpha_pattern={"v_proj": 3.0})


def _theirs(pm):
    return {n.removeprefix("base_model.model.").replace(".default", "")
            .replace(".modules_to_save", "")
            .replace(".lora_magnitude_vector.weight", ".lora_magnitude_vector"): p
            for n, p in pm.named_parameters() if p.requires_grad}


# (round 41: rsLoRA alone and the patterns alone left out, each checked by their sum: the
# layers the patterns leave take rsLoRA's scaling with the default rank and alpha)
@pytest.mark.parametrize("kw", [dict(use_rslora=True, **PATTERNS), dict(use_dora=True),
                                dict(use_dora=True, use_rslora=True, **PATTERNS),
                                dict(layers_to_transform=[1]),
                                dict(layers_to_transform=0, layers_pattern="layers",
                                     exclude_modules=["layers.0.self_attn.o_proj"]),
                                dict(exclude_modules=".*\\.1\\.self_attn\\.(q|v)_proj"),
                                dict(modules_to_save=["q_proj"])])
def test_rslora_and_patterns_as_peft(tmp_path, kw):
    folder = tmp_path / "base"
    _, ref = make_checkpoint(folder, "dense-mha-untied-bias")  # biases: DoRA adds them apart
    targets = ["q_proj", "v_proj", "o_proj"]
    pm = peft.get_peft_model(ref, peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets,
                                                  **kw))
    model = from_pretrained(folder)
    apply_lora(model, r=4, alpha=8, target_modules=targets, **kw)
    mine, theirs = dict(model.named_parameters()), _theirs(pm)
    assert sorted(n for n, p in mine.items() if p.requires_grad) == sorted(theirs)
    for n, p in theirs.items():
        assert tuple(mine[n].shape) == tuple(p.shape), n  # the ranks of the patterns
        mine[n].data[...] = p.detach().numpy()
    ids = random_ids(model.config.vocab_size, (2, 10), seed=21)
    # eps 1e-4 in both: lora_A's gradient is 0 at step 1 (lora_B starts at 0) and near eps
    # in places after, where eps 1e-8 makes AdamW's step ~lr * sign(g) and float32 rounding
    # flips it (round 48: another LoRA test went 1.9x past its tolerance so)
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, eps=1e-4)
    topt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=1e-2,
                             eps=1e-4)
    for step in range(3):
        loss = model(ids, labels=ids).loss
        tloss = pm(torch.tensor(ids), labels=torch.tensor(ids)).loss
        assert abs(loss.item() - tloss.item()) <= 1e-4 * tloss.item(), step
        loss.backward()
        opt.step()
        opt.zero_grad()
        tloss.backward()
        topt.step()
        topt.zero_grad()
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
    scale = np.abs(want).max()
    np.testing.assert_allclose(np.asarray(model(ids).numpy()), want, atol=1e-4 * scale)
    save_adapter(model, tmp_path / "adapter")
    cfg = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert cfg["use_rslora"] == kw.get("use_rslora", False)
    assert cfg["use_dora"] == kw.get("use_dora", False)
    base = transformers.AutoModelForCausalLM.from_pretrained(folder)
    loaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    pm.save_pretrained(tmp_path / "peft")
    with torch.no_grad():
        np.testing.assert_allclose(loaded(torch.tensor(ids)).logits.numpy(), want,
                                   atol=1e-4 * scale)
    for path in (tmp_path / "adapter", tmp_path / "peft"):
        again = load_adapter(from_pretrained(folder), path)
        np.testing.assert_allclose(np.asarray(again(ids).numpy()), want, atol=1e-4 * scale)
    save_pretrained(model, tmp_path / "merged")
    merged = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged")
    with torch.no_grad():
        np.testing.assert_allclose(merged(torch.tensor(ids)).logits.numpy(), want,
                                   atol=1e-4 * scale)


def test_rslora_experts(tmp_path):
    folder, ref = make_checkpoint(tmp_path / "base", "moe-shared")
    pm = peft.get_peft_model(ref, peft.LoraConfig(
        r=4, lora_alpha=8, use_rslora=True, target_modules=["q_proj"],
        target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]))
    with torch.no_grad():  # non-zero B everywhere, so each scaling shows in the logits
        gen = torch.Generator().manual_seed(0)
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    pm.save_pretrained(tmp_path / "peft")
    model = load_adapter(from_pretrained(folder), tmp_path / "peft")
    ids = random_ids(model.config.vocab_size, (2, 8), seed=22)
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(np.asarray(model(ids).numpy()), want,
                               atol=1e-4 * np.abs(want).max())
    # round 43: a pattern with LoRA on the experts (was refused) keys them by peft's
    # parameter names, so q_proj's does not reach the experts' down_proj
    patterned = apply_lora(from_pretrained(folder), r=2, target_modules=[
        "q_proj", "experts.down_proj"], rank_pattern={"q_proj": 4})
    ranks = {(n.rpartition(".")[2], m.r) for n, m in patterned.named_modules()
             if n.endswith(("q_proj", "down_proj")) and hasattr(m, "lora_A")}
    assert ranks == {("q_proj", 4), ("down_proj", 2)}


def test_apply_lora_config_rebuilds_every_option(tmp_path):
    """A second model given the first's ``lora_config`` gets the same adapters (what a
    split strategy's whole-model gather needs), and with the values copied the same
    logits."""
    from skiff.kernels.train.models.lora import apply_lora_config

    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    apply_lora(model, r=4, alpha=8, target_modules=["q_proj", "v_proj"], use_dora=True,
               use_rslora=True, modules_to_save=["lm_head"], **PATTERNS)
    rng = np.random.default_rng(0)
    for p in model.parameters():
        if p.requires_grad:
            p.data[...] = p.numpy() + rng.normal(0, 0.05, p.shape).astype(np.float32)
    other = apply_lora_config(from_pretrained(folder), model.lora_config)
    mine = dict(model.named_parameters())
    theirs = dict(other.named_parameters())
    assert sorted(theirs) == sorted(mine)
    for n, p in theirs.items():
        assert p.requires_grad == mine[n].requires_grad and p.shape == mine[n].shape, n
        p.data[...] = mine[n].numpy()
    ids = random_ids(model.config.vocab_size, (1, 6), seed=2)
    np.testing.assert_allclose(np.asarray(other(ids).numpy()), np.asarray(model(ids).numpy()),
                               atol=1e-6)

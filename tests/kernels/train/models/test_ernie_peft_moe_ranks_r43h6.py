"""peft's own adapter of the most common MoE LoRA config (round 43, h6).

``LoraConfig(target_modules=["q_proj", "gate_proj", "up_proj", "down_proj"])`` on an
ERNIE-4.5 MoE: peft (0.21, transformers 5) rewrites the MLP names as the routed experts'
fused ``target_parameters`` and gives ``gate_up_proj`` rank 2r (``rank_pattern`` /
``alpha_pattern`` ``{'.*\\.gate_up_proj': ...}`` in the saved config). skiff refused that
folder ("rank_pattern / alpha_pattern with LoRA on the experts is not supported here"), so a
peft fine-tune of an MoE could not be loaded, saved back or merged. Oracle: peft's model of
the same checkpoint and adapter (logits, its save read back, its merged model).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import save_adapter

from .ernie_reference import make_checkpoint, torch, transformers

peft = pytest.importorskip("peft")
IDS = np.random.default_rng(0).integers(3, 80, (2, 9))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The checkpoint, and peft's adapter on it with every LoRA weight moved."""
    root = tmp_path_factory.mktemp("r43h6-moe-ranks")
    make_checkpoint(root / "base", "moe-shared")
    pm = peft.get_peft_model(
        transformers.AutoModelForCausalLM.from_pretrained(root / "base"),
        peft.LoraConfig(r=2, lora_alpha=4,
                        target_modules=["q_proj", "gate_proj", "up_proj", "down_proj"]))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if ".lora_" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    pm.save_pretrained(root / "peft")
    return root, pm.eval()


def _logits(pm):
    with torch.no_grad():
        return pm(torch.tensor(IDS)).logits.numpy()


def test_peft_moe_adapter_with_a_fused_rank_loads_saves_and_merges(trained, tmp_path):
    root, pm = trained
    cfg = json.loads((root / "peft" / "adapter_config.json").read_text())
    # the premise: peft wrote the experts' fused weights with their own rank
    assert sorted(cfg["target_parameters"]) == ["down_proj", "gate_up_proj"]
    assert list(cfg["rank_pattern"].values()) == [4]
    want = _logits(pm)
    scale = np.abs(want).max()

    model = from_pretrained(root / "base")
    model.load_adapter(root / "peft")
    np.testing.assert_allclose(model(IDS).numpy(), want, atol=1e-5 * scale)
    ranks = {n.rpartition(".gate_up_lora")[0].rpartition(".")[2]: m.r
             for n, m in model.named_modules() if n.endswith("gate_up_lora") and m is not None}
    assert set(ranks.values()) == {4}

    save_adapter(model, tmp_path / "back")  # skiff's save, read by peft
    again = peft.PeftModel.from_pretrained(
        transformers.AutoModelForCausalLM.from_pretrained(root / "base"),
        tmp_path / "back").eval()
    np.testing.assert_allclose(_logits(again), want, atol=1e-5 * scale)

    merged = model.merge_and_unload()  # as peft's merged model
    with torch.no_grad():
        peft_merged = again.merge_and_unload()(torch.tensor(IDS)).logits.numpy()
    np.testing.assert_allclose(merged(IDS).numpy(), peft_merged, atol=1e-5 * scale)
    assert not any(".lora_" in n for n, _ in merged.named_parameters())


def test_job_lora_targets_read_as_peft_reads_them(trained, tmp_path):
    """Round 43 (h13): a job's ``--lora-targets q_proj,gate_proj,up_proj,down_proj`` on an
    MoE (``apply_job_lora``, what the CLI and ``%train`` build) is peft's model of the same
    LoraConfig: the adapter's tensors are peft's own (names, shapes: the routed experts,
    gate+up fused at rank 2r, no shared-expert or dense-MLP LoRA), the saved adapter loads in
    peft with skiff's logits and says nothing about a misread. Before, the names adapted the
    shared experts' and dense layer's linears, an adapter peft loads without them."""
    import warnings

    from safetensors.numpy import load_file

    from skiff.kernels.train.models.lora import apply_job_lora

    root, _ = trained
    model = from_pretrained(root / "base")
    apply_job_lora(model, {"r": 2, "alpha": 4.0,
                           "targets": ["q_proj", "gate_proj", "up_proj", "down_proj"]})
    rng = np.random.default_rng(1)
    for n, p in model.named_parameters():
        if "lora_" in n:  # every LoRA weight moved (B starts at zero)
            p._data = p._data + rng.normal(0, 0.3, p.shape).astype(np.float32)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        save_adapter(model, tmp_path / "job")
    assert not [w for w in seen if "routed experts' fused" in str(w.message)]
    mine = load_file(tmp_path / "job" / "adapter_model.safetensors")
    theirs = load_file(root / "peft" / "adapter_model.safetensors")
    assert {k: v.shape for k, v in mine.items()} == {k: v.shape for k, v in theirs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peft's "rank_pattern keys did not match" (its own)
        pm = peft.PeftModel.from_pretrained(
            transformers.AutoModelForCausalLM.from_pretrained(root / "base"),
            tmp_path / "job").eval()
    want = _logits(pm)
    np.testing.assert_allclose(model(IDS).numpy(), want, atol=1e-5 * np.abs(want).max())
    with pytest.raises(ValueError, match="without up_proj"):  # peft refuses it too
        apply_job_lora(from_pretrained(root / "base"),
                       {"r": 2, "alpha": 4.0, "targets": ["q_proj", "gate_proj"]})


def test_all_linear_on_an_moe_is_peft_all_linear(trained, tmp_path):
    """Round 44 (h6): peft resolves ``target_modules="all-linear"`` on an ERNIE-4.5 MoE to the
    attention, the routed experts (gate+up fused at rank 2r, down at r) and the router's
    weight (``target_parameters`` ``gate.weight``, rank r), and leaves the shared experts, a
    dense layer's MLP and the head alone. skiff refused that adapter ("LoRA on the MoE
    router ... is not supported") and a job's ``--lora-targets all-linear`` adapted the shared
    experts' and dense MLP's linears instead (an adapter peft loads without them). Now both
    are peft's: the job's tensors are peft's own (names, shapes), each loads in the other
    with the other's logits, and the merged models agree."""
    import warnings

    from safetensors.numpy import load_file

    from skiff.kernels.train.models.lora import apply_job_lora

    root, _ = trained
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # peft's "rank_pattern keys did not match" (its own)
        pm = peft.get_peft_model(
            transformers.AutoModelForCausalLM.from_pretrained(root / "base"),
            peft.LoraConfig(r=2, lora_alpha=4, target_modules="all-linear"))
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if ".lora_" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    pm.save_pretrained(tmp_path / "peft")
    theirs = load_file(tmp_path / "peft" / "adapter_model.safetensors")
    assert any(k.endswith("mlp.gate.lora_B.weight") for k in theirs)  # the premise: router
    want = _logits(pm.eval())
    model = from_pretrained(root / "base")
    model.load_adapter(tmp_path / "peft")  # peft's all-linear adapter, router LoRA and all
    np.testing.assert_allclose(model(IDS).numpy(), want, atol=1e-5 * np.abs(want).max())

    job = from_pretrained(root / "base")  # what --lora-targets all-linear builds
    apply_job_lora(job, {"r": 2, "alpha": 4.0, "targets": "all-linear"})
    rng = np.random.default_rng(4)
    for n, p in job.named_parameters():
        if "lora_" in n:
            p._data = p._data + rng.normal(0, 0.3, p.shape).astype(np.float32)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        save_adapter(job, tmp_path / "job")
    assert not [w for w in seen if "routed experts' fused" in str(w.message)]
    mine = load_file(tmp_path / "job" / "adapter_model.safetensors")
    assert {k: v.shape for k, v in mine.items()} == {k: v.shape for k, v in theirs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = peft.PeftModel.from_pretrained(
            transformers.AutoModelForCausalLM.from_pretrained(root / "base"),
            tmp_path / "job").eval()
    want = _logits(again)
    scale = np.abs(want).max()
    np.testing.assert_allclose(job(IDS).numpy(), want, atol=1e-5 * scale)
    with torch.no_grad():
        peft_merged = again.merge_and_unload()(torch.tensor(IDS)).logits.numpy()
    np.testing.assert_allclose(job.merge_and_unload()(IDS).numpy(), peft_merged,
                               atol=1e-5 * scale)

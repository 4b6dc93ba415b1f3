"""LoRA on ERNIE-4.5 against peft on the transformers model: the same adapters give the same
logits, AdamW steps on the adapters alone give the same losses and adapters, the adapter
skiff saves loads in peft, and the merged checkpoint loads in transformers, all with equal
logits."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.data import ArrayDataset
from skiff.kernels.train.models import from_pretrained, save_pretrained
from skiff.kernels.train.models.lora import apply_lora, has_lora, merge_lora, save_adapter
from skiff.kernels.train.trainer import Trainer

from .ernie_reference import make_checkpoint, torch, transformers

peft = pytest.importorskip("peft")
# (peft's target_modules, its target_parameters: the fused experts of the MoE layers); with
# experts in a model peft reads MLP names in target_modules as the fused experts' (and
# refuses gate_proj without up_proj), so the MoE cases name attention layers there
TARGETS = {"dense-gqa-tied": (["q_proj", "v_proj", "o_proj", "gate_proj", "down_proj"], []),
           "moe-shared": (["q_proj", "k_proj", "v_proj", "o_proj"], []),
           "moe-experts": (["q_proj", "o_proj"],
                           ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]),
           "moe-gate-up": (["v_proj"], ["mlp.experts.gate_up_proj"])}
SHAPE = {"moe-experts": "moe-shared", "moe-gate-up": "moe-interval"}


def _peft_adapters(pref, hidden: int) -> dict[str, np.ndarray]:
    """skiff's adapter name -> peft's values: a fused expert adapter (lora_A (r E, in),
    lora_B (out, r E), read by peft as (E, r, in) and (out, r, E)) is cut per expert."""
    out = {}
    for name, m in pref.named_modules():
        if not (hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {})):
            continue
        A = m.lora_A["default"].weight.detach().numpy()
        B = m.lora_B["default"].weight.detach().numpy()
        name = name.removeprefix("base_model.model.")
        if getattr(m, "num_experts", 1) == 1:
            out[f"{name}.lora_A.weight"], out[f"{name}.lora_B.weight"] = A, B
            continue
        E = m.num_experts
        r = A.shape[0] // E
        part = "gate_up_lora" if A.shape[1] == hidden else "down_proj"
        prefix = name.removesuffix(".base_layer")
        for e in range(E):
            out[f"{prefix}.{e}.{part}.lora_A.weight"] = A.reshape(E, r, -1)[e]
            out[f"{prefix}.{e}.{part}.lora_B.weight"] = B.reshape(B.shape[0], r, E)[:, :, e]
    return out


def _pair(folder, shape):
    _, ref = make_checkpoint(folder, SHAPE.get(shape, shape))
    modules, params = TARGETS[shape]
    cfg = peft.LoraConfig(r=4, lora_alpha=8, target_modules=modules, lora_dropout=0.0,
                          target_parameters=params or None)
    torch.manual_seed(0)  # peft draws lora_A from torch's global generator
    pref = peft.get_peft_model(ref, cfg)
    model = apply_lora(from_pretrained(folder), r=4, alpha=8,
                       target_modules=modules + [p.removeprefix("mlp.") for p in params])
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():  # B is zero at the start: give it values
        for _name, m in pref.named_modules():
            if hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {}):
                m.lora_B["default"].weight.copy_(
                    torch.randn(m.lora_B["default"].weight.shape, generator=gen) * 0.3)
    theirs = _peft_adapters(pref, model.config.hidden_size)
    mine = {n: p for n, p in model.named_parameters() if ".lora_" in n}
    assert sorted(mine) == sorted(theirs)
    for n, p in mine.items():  # copy A and B over
        p._data[...] = theirs[n]
    return pref, model


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "moe-shared", "moe-experts",
                                   "moe-gate-up"])
def test_lora_equals_peft(tmp_path, shape):
    pref, model = _pair(tmp_path / "base", shape)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in n for n in trainable)
    ids = np.random.default_rng(6).integers(3, model.config.vocab_size, (3, 9))
    x, y = ids[:, :-1], ids[:, 1:]
    with torch.no_grad():
        want = pref(torch.tensor(x)).logits.numpy()
    got = model(x).numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()
    # AdamW on the adapters only, both sides
    steps, lr = 3, 5e-3
    result = Trainer(model, lr=lr, batch_size=3, schedule="constant", clip=None,
                     shuffle=False).train(ArrayDataset(x, y), steps=steps)
    opt = torch.optim.AdamW([p for p in pref.parameters() if p.requires_grad], lr=lr,
                            weight_decay=0.01)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        logits = pref(torch.tensor(x)).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 torch.tensor(y).reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.allclose([h["loss"] for h in result.history], losses, rtol=1e-4)
    theirs = _peft_adapters(pref, model.config.hidden_size)
    for name, p in model.named_parameters():
        if ".lora_" in name:
            want_p = theirs[name]
            assert np.abs(p.numpy() - want_p).max() <= 1e-4 * np.abs(want_p).max(), name
    # the adapter in peft's layout, loaded by peft on a fresh base
    save_adapter(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "base")
    loaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    after = model(x).numpy()
    with torch.no_grad():
        back = loaded(torch.tensor(x)).logits.numpy()
    assert np.abs(back - after).max() <= 1e-4 * np.abs(after).max()
    # merged weights in the checkpoint layout, loaded by transformers
    save_pretrained(model, tmp_path / "merged")
    merged = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()
    with torch.no_grad():
        back = merged(torch.tensor(x)).logits.numpy()
    assert np.abs(back - after).max() <= 1e-4 * np.abs(after).max()
    merge_lora(model)
    assert not has_lora(model)
    assert np.abs(model(x).numpy() - after).max() <= 1e-5 * np.abs(after).max()


def test_lora_bad_targets(tmp_path):
    make_checkpoint(tmp_path, "dense-gqa-tied")
    model = from_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"\['qkv'\] name no linear layer"):
        apply_lora(model, target_modules=["q_proj", "qkv"])
    with pytest.raises(ValueError, match="rank r must be a positive integer"):
        apply_lora(model, r=0)
    with pytest.raises(ValueError, match="has no experts"):
        apply_lora(model, target_modules=["q_proj", "experts.gate_up_proj"])
    with pytest.raises(ValueError, match="adapted as experts.gate_up_proj"):
        apply_lora(model, target_modules=["experts.up_proj"])

"""peft's other ways to name targets (round 25 probe): ``target_modules="all-linear"`` and a
string as a regular expression of whole names. Before, a string was read letter by letter
("LoRA target_modules ['-', 'a', 'e', ...] name no linear layer"); now the same layers as
peft are adapted (dense model), the logits equal peft's, and the saved adapter loads in peft
with equal logits; ``--lora-targets all-linear`` reaches the same."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.models import from_pretrained
from skiff.kernels.train.models.lora import apply_lora, lora_modules, save_adapter

from .ernie_reference import make_checkpoint, random_ids, torch

peft = pytest.importorskip("peft")


def _peft_names(pref) -> set[str]:
    return {n.removeprefix("base_model.model.") for n, m in pref.named_modules()
            if hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {})}


@pytest.mark.parametrize("targets", ["all-linear", r".*\.1\.self_attn\.(q|v)_proj"])
def test_string_targets_as_peft(tmp_path, targets):
    _, ref = make_checkpoint(tmp_path, "dense-gqa-tied")
    torch.manual_seed(0)
    pref = peft.get_peft_model(ref, peft.LoraConfig(r=4, lora_alpha=8, target_modules=targets))
    model = apply_lora(from_pretrained(tmp_path), r=4, alpha=8, target_modules=targets)
    assert {n for n, _ in lora_modules(model)} == _peft_names(pref)
    if targets == "all-linear":  # as a list too (--lora-targets all-linear): the same layers
        # and the same saved config (round 42 h12: was a third case of its own)
        listed = apply_lora(from_pretrained(tmp_path), r=4, alpha=8, target_modules=[targets])
        assert {n for n, _ in lora_modules(listed)} == _peft_names(pref)
        assert listed.lora_config["target_modules"] == model.lora_config["target_modules"]
    gen = torch.Generator().manual_seed(3)
    mine = dict(model.named_parameters())
    with torch.no_grad():
        for name, m in pref.named_modules():
            if hasattr(m, "lora_A") and "default" in getattr(m, "lora_A", {}):
                m.lora_B["default"].weight.copy_(
                    torch.randn(m.lora_B["default"].weight.shape, generator=gen) * 0.3)
                short = name.removeprefix("base_model.model.")
                for part in ("lora_A", "lora_B"):
                    w = getattr(m, part)["default"].weight.numpy()
                    mine[f"{short}.{part}.weight"].data[...] = w
    ids = random_ids(model.config.vocab_size, (2, 9))
    with torch.no_grad():
        want = pref(torch.tensor(ids)).logits.numpy()
    got = np.asarray(model(ids).numpy())
    assert np.abs(got - want).max() < 1e-4 * np.abs(want).max()
    save_adapter(model, tmp_path / "adapter")
    _, base = make_checkpoint(tmp_path / "again", "dense-gqa-tied")
    loaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    assert _peft_names(loaded) == _peft_names(pref)
    with torch.no_grad():
        again = loaded(torch.tensor(ids)).logits.numpy()
    assert np.abs(again - want).max() < 1e-4 * np.abs(want).max()


def test_string_targets_mistakes(tmp_path):
    make_checkpoint(tmp_path, "moe-shared")
    model = from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="matches no linear layer.*regular expression"):
        apply_lora(model, r=4, target_modules="q_proj")  # peft: a whole-name regex too
    with pytest.raises(ValueError, match="is not a regular expression"):
        apply_lora(model, r=4, target_modules="(")
    apply_lora(model, r=4, target_modules="all-linear")  # the router and experts stay
    names = {n for n, _ in lora_modules(model)}
    assert names and not any(".experts." in n or n.endswith("mlp.gate") for n in names)
    assert any("shared_experts" in n for n in names)

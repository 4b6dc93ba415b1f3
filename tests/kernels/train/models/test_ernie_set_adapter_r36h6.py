"""transformers' ``model.set_adapter(name)`` / ``model.active_adapters()`` (round 36, h6;
each was an AttributeError): skiff holds one adapter per model, named "default", as peft
and transformers name an adapter loaded without a name. The names are peft's on the same
adapter; the errors transformers' words (its peft integration needs peft >= 0.22, the
venv holds 0.21: the words are read from its source)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import skiff
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, torch, transformers

peft = pytest.importorskip("peft")
INTEGRATION = (Path(transformers.__file__).parent / "integrations" / "peft.py").read_text()
NONE = "No adapter loaded. Please load an adapter first."


def _error(call):
    try:
        call()
    except ValueError as e:
        return str(e)
    raise AssertionError("no error")


def test_set_adapter_and_active_adapters_as_transformers(tmp_path):
    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    assert NONE in INTEGRATION and "Adapter with name {adapter_name} not found. Please pass " \
        "the correct adapter name among {list(self.peft_config.keys())}" in INTEGRATION
    assert _error(model.active_adapters) == NONE  # before any adapter
    assert _error(lambda: model.set_adapter("default")) == NONE
    skiff.models.apply_lora(model, r=4, alpha=8, target_modules=["q_proj", "v_proj"])
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p._data = p._data + np.float32(0.3)
    skiff.models.save_adapter(model, tmp_path / "adapter")
    base = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    pm = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    assert model.active_adapters() == pm.active_adapters == ["default"]
    ids = np.array([[5, 6, 7, 8]])
    before = model(ids).numpy()
    model.set_adapter("default")
    pm.set_adapter("default")
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(model(ids).numpy(), before)
    np.testing.assert_allclose(before, want, atol=1e-4)
    with pytest.raises(ValueError, match=r"Adapter with name dpo not found. Please pass the "
                                         r"correct adapter name among \['default'\]$"):
        model.set_adapter("dpo")
    with pytest.raises(ValueError, match="Adapter with name b not found"):
        model.set_adapter(["default", "b"])

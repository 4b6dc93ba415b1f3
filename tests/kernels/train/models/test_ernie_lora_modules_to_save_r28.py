"""peft's ``modules_to_save`` (round 28): whole modules trained beside LoRA and saved in the
adapter. Trained against peft's model by torch (losses each step, the trained tables), the
adapter read by ``PeftModel.from_pretrained`` and peft's own adapter read by skiff (the same
logits), and the merged folder read by transformers (a tied head stays untied, as peft's
copy made it)."""

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

CASES = [("dense-gqa-tied", ["lm_head"]), ("dense-gqa-tied", ["embed_tokens"]),
         ("dense-mha-untied-bias", ["embed_tokens", "lm_head"]),
         ("moe-shared", ["lm_head", "norm"])]


def _logits(model, ids):
    return np.asarray(model(ids).numpy())


@pytest.mark.parametrize("shape,names", CASES)
def test_modules_to_save_trains_saves_and_reloads_as_peft(tmp_path, shape, names):
    folder = tmp_path / "base"
    _, ref = make_checkpoint(folder, shape)
    kw = dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], modules_to_save=names)
    pm = peft.get_peft_model(ref, peft.LoraConfig(**kw))
    model = from_pretrained(folder)
    apply_lora(model, r=4, alpha=8, target_modules=kw["target_modules"], modules_to_save=names)
    mine = dict(model.named_parameters())
    theirs = {n.removeprefix("base_model.model.").replace(".default", "")
              .replace(".modules_to_save", ""): p
              for n, p in pm.named_parameters() if p.requires_grad}
    assert sorted(n for n, p in mine.items() if p.requires_grad) == sorted(theirs)
    with torch.no_grad():  # peft's random lora_A in skiff too
        for n, p in theirs.items():
            mine[n].data[...] = p.detach().numpy()
    vocab = model.config.vocab_size
    emb0 = model.model.embed_tokens.weight.numpy().copy()
    ids = random_ids(vocab, (2, 12), seed=3)
    # eps 1e-4 in both: with 1e-8, an entry whose gradient is near eps (lora_A's is 0 at step
    # 1, lora_B starting at 0; a table's rare rows) steps by ~lr * g / (|g| + eps), which float32
    # rounding moves by a large part of lr (a CI machine's BLAS: 0.2 lr; here up to 0.06 lr).
    # With 1e-4 the two agree to ~0.002 lr and every table still moves by > lr.
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, eps=1e-4)
    topt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=1e-3,
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
    # every trained tensor, the whole tables too, to 0.1 lr
    for n, p in theirs.items():
        np.testing.assert_allclose(mine[n].numpy(), p.detach().numpy(), atol=1e-4, err_msg=n)
    moved = np.abs(model.model.embed_tokens.weight.numpy() - emb0).max()
    assert (moved > 1e-3) == ("embed_tokens" in names)  # only a saved table trains
    with torch.no_grad():
        want = pm(torch.tensor(ids)).logits.numpy()
    scale = np.abs(want).max()
    np.testing.assert_allclose(_logits(model, ids), want, atol=1e-4 * scale)

    # skiff's adapter in peft, and in skiff again
    save_adapter(model, tmp_path / "adapter")
    cfg = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert cfg["modules_to_save"]
    base = transformers.AutoModelForCausalLM.from_pretrained(folder)
    loaded = peft.PeftModel.from_pretrained(base, tmp_path / "adapter").eval()
    with torch.no_grad():
        np.testing.assert_allclose(loaded(torch.tensor(ids)).logits.numpy(), want,
                                   atol=1e-4 * scale)
    again = load_adapter(from_pretrained(folder), tmp_path / "adapter")
    np.testing.assert_allclose(_logits(again, ids), want, atol=1e-4 * scale)

    # peft's own adapter in skiff
    pm.save_pretrained(tmp_path / "peft-adapter")
    ours = load_adapter(from_pretrained(folder), tmp_path / "peft-adapter")
    np.testing.assert_allclose(_logits(ours, ids), want, atol=1e-4 * scale)

    # merged: transformers reads the trained tables back (a tied head stays untied)
    save_pretrained(model, tmp_path / "merged")
    merged = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "merged").eval()
    with torch.no_grad():
        np.testing.assert_allclose(merged(torch.tensor(ids)).logits.numpy(), want,
                                   atol=1e-4 * scale)


def test_modules_to_save_errors(tmp_path):
    folder, _ = make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    model = from_pretrained(folder)
    with pytest.raises(ValueError, match="name no module"):
        apply_lora(model, r=2, modules_to_save=["decoder_head"])
    with pytest.raises(ValueError, match="trainable_token_indices"):
        apply_lora(from_pretrained(folder), r=2, modules_to_save=["embed_tokens"],
                   trainable_token_indices=[5])

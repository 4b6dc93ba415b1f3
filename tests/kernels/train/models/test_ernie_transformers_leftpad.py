"""Training on a left-padded batch (round 26): ``model(**tok(texts, padding=True,
padding_side="left"), labels=labels)`` with the pads' labels -100, as a collator makes them.
Each row's first real token is then predicted from a padded position. transformers counts
that prediction with what its attention makes of a row with nothing to attend to, which
differs between its own eager and sdpa attention (the same batch: two loss values); skiff
leaves it out, and its loss and AdamW steps equal transformers' (both attentions) with that
label -100. Before, skiff counted it with the padded position's zero logits (log V)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.optim import AdamW
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_sentencepiece_checkpoint, torch, transformers

TEXTS = ["Hello world", "What is two plus two? Four.", "The quick brown fox jumps"]


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_left_padded_loss_and_steps(tmp_path, attn):
    make_sentencepiece_checkpoint(tmp_path)
    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path, attn_implementation=attn)
    model = from_pretrained(tmp_path)
    enc = model.tokenizer(TEXTS, padding=True, padding_side="left", return_tensors="np")
    ids, mask = enc["input_ids"], enc["attention_mask"]
    assert (mask == 0).any(axis=1).sum() == 2  # two rows padded
    labels = np.where(mask == 1, ids, -100)  # the collator's labels
    first = mask.argmax(axis=1)
    theirs = labels.copy()
    theirs[np.arange(len(ids)), first] = -100  # the first real token: nothing before it
    t = {k: torch.tensor(v) for k, v in dict(input_ids=ids, attention_mask=mask).items()}
    with torch.no_grad():
        counted = ref(**t, labels=torch.tensor(labels)).loss.item()
    model.train()
    ref.train()
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3)
    topt = torch.optim.AdamW(ref.parameters(), lr=2e-3)
    for step in range(3):
        loss = model(ids, attention_mask=mask, labels=labels).loss
        tloss = ref(**t, labels=torch.tensor(theirs)).loss
        assert abs(loss.item() - tloss.item()) <= 1e-4 * abs(tloss.item()), step
        if step == 0:  # transformers' own count of the first token is another value
            assert abs(counted - tloss.item()) > 1e-3
        loss.backward()
        opt.step()
        opt.zero_grad()
        tloss.backward()
        topt.step()
        topt.zero_grad()

"""A transformers training loop run on skiff (round 25 probe): ``out = model(ids,
labels=labels); out.loss.backward(); opt.step()``. ``labels`` was a TypeError; now the loss
is transformers' (the shift made inside, -100 left out, also with a right-padded
``attention_mask``), and three AdamW steps written that way give torch's losses."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.optim import AdamW
from skiff.kernels.train.models import from_pretrained

from .ernie_reference import make_checkpoint, random_ids, torch


@pytest.mark.parametrize("shape", ["dense-gqa-tied", "moe-shared"])
def test_labels_loss_and_steps_equal_transformers(tmp_path, shape):
    _, ref = make_checkpoint(tmp_path, shape)
    model = from_pretrained(tmp_path)
    ids = random_ids(model.config.vocab_size, (3, 10), seed=7)
    labels = ids.copy()
    labels[0, :4] = -100  # a prompt left out of the loss
    out = model(ids, labels=labels)
    assert out["logits"] is out.logits and out[0] is out.loss
    with torch.no_grad():
        want = ref(torch.tensor(ids), labels=torch.tensor(labels)).loss.item()
    assert abs(out.loss.item() - want) <= 1e-5 * abs(want)
    mask = np.ones_like(ids)
    mask[1, -3:] = 0  # right padding (training's): the pads' labels -100, as collators do
    padded = labels.copy()
    padded[1, -3:] = -100
    with torch.no_grad():
        want_pad = ref(torch.tensor(ids), attention_mask=torch.tensor(mask),
                       labels=torch.tensor(padded)).loss.item()
    got_pad = model(ids, attention_mask=mask, labels=padded).loss.item()
    assert abs(got_pad - want_pad) <= 1e-5 * abs(want_pad)
    model.train()
    ref.train()
    opt = AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3)
    topt = torch.optim.AdamW(ref.parameters(), lr=2e-3)
    for _ in range(3):
        loss = model(ids, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        tloss = ref(torch.tensor(ids), labels=torch.tensor(labels)).loss
        tloss.backward()
        topt.step()
        topt.zero_grad()
        assert abs(loss.item() - tloss.item()) <= 1e-4 * abs(tloss.item())
    with pytest.raises(ValueError, match="labels have shape"):
        model(ids, labels=labels[:, :5])


def test_labels_add_the_balancing_loss_as_transformers(tmp_path):
    """With ``output_router_logits`` transformers adds ``router_aux_loss_coef`` times its
    balancing loss to the labels' loss; so does ``model(ids, labels=...)``, with and
    without a gradient."""
    from skiff.kernels.train.core.autograd import no_grad

    from .ernie_reference import build_reference

    ref = build_reference("moe-interval")
    ref.config.output_router_logits = True
    ref.config.router_aux_loss_coef = 0.5
    ref.save_pretrained(tmp_path)
    import transformers

    ref = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()  # reads the
    model = from_pretrained(tmp_path)  # coefficient when built, so build it from the file
    ids = random_ids(model.config.vocab_size, (2, 10), seed=8)
    with torch.no_grad():
        want = ref(torch.tensor(ids), labels=torch.tensor(ids)).loss.item()
    got = model(ids, labels=ids).loss.item()
    model(random_ids(model.config.vocab_size, (1, 4), seed=9))  # other routing, kept
    with no_grad():
        quiet = model(ids, labels=ids).loss.item()
    assert abs(got - want) <= 1e-5 * want and abs(quiet - want) <= 1e-5 * want

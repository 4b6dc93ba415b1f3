"""A dataset of HF-style dict items (``{"input_ids", "attention_mask", "labels"}``) and a model
whose ``forward(input_ids, attention_mask=None, labels=None)`` returns the loss with labels:
the Trainer calls ``model(**batch)`` as HF's Trainer does. The oracle: the torch 2.13 twin
(an Embedding LM that shifts its labels inside, as a causal LM does) trained the same way.

Found by a user: such a dataset failed at the first step ("a dict batch needs an input key
(x, input, ...)"); and a loss taken outside on ``(input_ids, labels)`` would miss the model's
own label shift.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core.nn.module import Module
from skiff.nn import Embedding, Linear, Sequential

F = skiff.nn.functional
V, T, N = 12, 8, 32


class CausalLM(Module):
    def __init__(self):
        super().__init__()
        skiff.seed(0)
        self.emb = Embedding(V, V)

    def forward(self, input_ids, attention_mask=None, labels=None):
        logits = self.emb(input_ids)
        if labels is None:
            return logits
        # labels are the inputs (HF's convention): shift inside, mask padded positions
        shifted = labels[:, 1:]
        if attention_mask is not None:
            shifted = np.where(attention_mask[:, 1:] > 0, shifted, -100)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), shifted.reshape(-1))
        return {"loss": loss, "logits": logits}


def _ids():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, V, (N, T))
    mask = np.ones((N, T), np.int64)
    mask[::3, -2:] = 0  # some padded ends
    return ids, mask


class Items:
    def __init__(self, ids, mask):
        self.ids, self.mask = ids, mask

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": self.mask[i], "labels": self.ids[i]}


def _torch_losses(weight, ids, mask, steps=6, batch=8, half=None):
    """torch's run; ``half=torch.float16``: fp16 copies of the float32 master, the loss in
    float32 (autocast's), scaled by 2^16 (GradScaler's first scale; no step overflows here)."""
    master = torch.tensor(weight, requires_grad=True)
    opt = torch.optim.SGD([master], lr=0.5, momentum=0.9)
    scale = 1.0 if half is None else 2.0 ** 16
    losses = []
    for s in range(steps):
        i = (s * batch) % N
        x, m = torch.tensor(ids[i:i + batch]), torch.tensor(mask[i:i + batch])
        target = torch.where(m[:, 1:] > 0, x[:, 1:], -100)
        w = master if half is None else master.detach().to(half).requires_grad_()
        loss = torch.nn.functional.cross_entropy(w[x][:, :-1].reshape(-1, V).float(),
                                                 target.reshape(-1))
        opt.zero_grad()
        (loss * scale).backward()
        if half is not None:
            master.grad = w.grad.float() / scale
            assert torch.isfinite(master.grad).all()
        opt.step()
        losses.append(loss.item())
    return losses


def test_dict_items_go_to_the_model_as_keywords():
    ids, mask = _ids()
    model = CausalLM()
    want = _torch_losses(model.emb.weight.numpy().copy(), ids, mask)
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.5, batch_size=8, shuffle=False,
                            schedule="constant", clip=None)
    got = [r["loss"] for r in trainer.train(Items(ids, mask), steps=6).history]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_a_forward_that_names_y_but_returns_outputs_still_gets_the_loss_taken():
    """{"x", "y"} items and forward(x, y=None) returning logits: the Trainer's cross-entropy
    on them, as before (torch's cross_entropy on the twin's logits)."""
    class Named(Module):
        def __init__(self):
            super().__init__()
            skiff.seed(0)
            self.net = Sequential(Linear(4, 3))

        def forward(self, x, y=None):
            return self.net(x)

    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    model = Named()
    ref = torch.nn.Linear(4, 3)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(model.net[0].weight.numpy()))
        ref.bias.copy_(torch.tensor(model.net[0].bias.numpy()))
        want = torch.nn.functional.cross_entropy(ref(torch.tensor(x)), torch.tensor(y)).item()
    items = [{"x": x[i], "y": y[i]} for i in range(16)]
    got = skiff.Trainer(model, batch_size=16).evaluate(items)
    assert got["val_loss"] == pytest.approx(want, rel=1e-5)
    assert "val_accuracy" in got


def test_fp16_mixed_and_predict_on_dict_items():
    """fp16-mixed on the same items (the float32 forward wrapper hid forward's parameters:
    "needs an input key"), losses against torch's fp16 run; predict gives the twin's logits."""
    ids, mask = _ids()
    model = CausalLM()
    weight = model.emb.weight.numpy().copy()
    want = _torch_losses(weight, ids, mask, half=torch.float16)
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.5, batch_size=8, shuffle=False,
                            schedule="constant", clip=None, precision="fp16-mixed")
    got = [r["loss"] for r in trainer.train(Items(ids, mask), steps=6).history]
    assert trainer.mixed.skipped == 0
    np.testing.assert_allclose(got, want, rtol=1e-3)
    fresh = CausalLM()
    pred = skiff.Trainer(fresh, batch_size=8).predict(Items(ids, mask))
    np.testing.assert_allclose(pred, torch.tensor(weight)[torch.tensor(ids)].numpy(), rtol=1e-6)

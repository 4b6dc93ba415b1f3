"""A model whose ``loss(batch)`` returns HF-style outputs: ``(loss, logits)``, a dict with
``"loss"``, or a ModelOutput-like object with ``.loss`` (as ``transformers`` models return
with ``labels=``). The Trainer takes the loss from them as HF's Trainer does; the oracle is
the torch 2.13 twin trained with SGD on the same batches.

Found by a user: ``forward(x, labels=y)`` returning ``(loss, logits)`` failed at the first
step with "AttributeError: 'tuple' object has no attribute 'item'".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core.nn.module import Module
from skiff.nn import Linear, ReLU, Sequential

F = skiff.nn.functional


@dataclass
class Output:
    loss: object
    logits: object


class HFStyle(Module):
    def __init__(self, kind):
        super().__init__()
        skiff.seed(0)
        self.net = Sequential(Linear(8, 16), ReLU(), Linear(16, 2))
        self.kind = kind

    def forward(self, x, labels=None):
        logits = self.net(x)
        if labels is None:
            return logits
        loss = F.cross_entropy(logits, labels)
        return {"tuple": (loss, logits), "dict": {"logits": logits, "loss": loss},
                "object": Output(loss, logits)}[self.kind]

    def loss(self, batch):
        x, y = batch
        return self(x, labels=y)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((48, 8)).astype(np.float32)
    return x, (x[:, :2].sum(1) > 0).astype(np.int64)


def _torch_losses(model, x, y, steps=6, batch=8):
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    with torch.no_grad():
        for t, p in zip(ref.parameters(), model.parameters()):
            t.copy_(torch.tensor(np.asarray(p.numpy(), np.float32)))
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for s in range(steps):
        i = (s * batch) % len(x)
        loss = torch.nn.functional.cross_entropy(ref(torch.tensor(x[i:i + batch])),
                                                 torch.tensor(y[i:i + batch]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        val = torch.nn.functional.cross_entropy(ref(torch.tensor(x)), torch.tensor(y)).item()
    return losses, val


@pytest.mark.parametrize("kind", ["tuple", "dict", "object"])
def test_loss_read_from_hf_style_outputs(kind):
    x, y = _data()
    model = HFStyle(kind)
    want, want_val = _torch_losses(model, x, y)
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, batch_size=8, shuffle=False,
                            schedule="constant", clip=None)
    got = [r["loss"] for r in trainer.train((x, y), steps=6).history]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert trainer.evaluate((x, y))["val_loss"] == pytest.approx(want_val, rel=1e-5)


def test_outputs_without_a_loss_say_what_is_wanted():
    class NoLoss(HFStyle):
        def loss(self, batch):
            return {"logits": self(batch[0])}

    with pytest.raises(TypeError, match=r"dict with 'loss'.*keys \['logits'\]"):
        skiff.Trainer(NoLoss("dict"), batch_size=8).train(_data(), steps=1)

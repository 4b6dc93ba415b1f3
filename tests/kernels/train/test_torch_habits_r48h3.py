"""Round 48 (h3): three torch habits said in one line that says what to do, when the Trainer
is made (they failed inside the first step with messages that did not):

- ``loss=torch.nn.functional.cross_entropy``: "cross_entropy_loss(): argument 'input'
  (position 1) must be Tensor, not Tensor";
- ``loss=nn.CrossEntropyLoss`` (the class): "CrossEntropyLoss.__init__() takes from 1 to 2
  positional arguments but 3 were given";
- ``schedule=StepLR`` (skiff's or torch's class): "StepLR.__init__() missing 1 required
  positional argument: 'step_size'".
Each message names what to pass instead, and that exists in skiff."""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402


@pytest.mark.parametrize("loss,said,fix", [
    (torch.nn.functional.cross_entropy, "torch's torch.nn.functional.cross_entropy",
     "skiff.nn.functional.cross_entropy"),
    (functools.partial(torch.nn.functional.cross_entropy, label_smoothing=0.1),
     "torch's torch.nn.functional.cross_entropy", "skiff.nn.functional.cross_entropy"),
    (nn.CrossEntropyLoss, "class CrossEntropyLoss", "loss=skiff.nn.CrossEntropyLoss()"),
    (torch.nn.MSELoss, "torch's class MSELoss", "loss=skiff.nn.MSELoss()"),
])
def test_a_loss_function_of_torch_or_a_loss_class_is_said(loss, said, fix):
    with pytest.raises(TypeError) as got:
        skiff.Trainer(nn.Linear(3, 2), loss=loss)
    msg = str(got.value)
    assert said in msg and fix in msg and "\n" not in msg, msg
    obj = skiff  # what it names exists
    for part in fix.split("=")[-1].rstrip("()").split(".")[1:]:
        obj = getattr(obj, part)


@pytest.mark.parametrize("cls,fix", [
    (skiff.optim.lr_scheduler.StepLR, "schedule=lambda opt: StepLR(opt, step_size=...)"),
    (torch.optim.lr_scheduler.CosineAnnealingLR,
     "schedule=lambda opt: skiff.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=...)"),
])
def test_a_scheduler_class_is_said_with_its_factory(cls, fix):
    with pytest.raises(TypeError, match="needs") as got:
        skiff.Trainer(nn.Linear(3, 2), schedule=cls)
    assert fix in str(got.value), got.value


def test_a_scheduler_class_needing_only_the_optimizer_still_passes():
    class Halve(skiff.optim.lr_scheduler.LambdaLR):
        def __init__(self, optimizer, last_epoch=-1):
            super().__init__(optimizer, lambda step: 0.5, last_epoch)

    skiff.Trainer(nn.Linear(3, 2), schedule=Halve)  # called with the optimizer: fine


class _TwoOutputs(nn.Module):
    """A forward of (logits, an auxiliary value), as many torch models return."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x):
        out = self.lin(x)
        return out, out.sum()


def test_a_forward_of_two_outputs_is_said_and_the_said_loss_trains():
    """Was "'tuple' object has no attribute 'shape'" from inside the loss."""
    import numpy as np

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 12
    y = np.array([0, 1, 0, 1])
    with pytest.raises(TypeError) as got:
        skiff.Trainer(_TwoOutputs(), batch_size=4).train((x, y), steps=1)
    msg = str(got.value)
    fix = "loss=lambda out, y: skiff.nn.functional.cross_entropy(out[0], y)"
    assert "returns a tuple of 2 (Tensor, Tensor)" in msg and fix in msg, msg
    model = _TwoOutputs()
    skiff.Trainer(model, batch_size=4,  # what it says to pass trains
                  loss=lambda out, y: skiff.nn.functional.cross_entropy(out[0], y)
                  ).train((x, y), steps=1)


def test_class_weight_with_a_binary_cross_entropy_names_pos_weight():
    with pytest.raises(ValueError, match=r"pos_weight: loss=nn.BCEWithLogitsLoss\(pos_weight="):
        skiff.Trainer(nn.Linear(3, 1), loss="bce", class_weight="balanced")
    nn.BCEWithLogitsLoss(pos_weight=skiff.tensor([2.0]))  # what it names exists

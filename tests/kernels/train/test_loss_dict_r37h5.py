"""Round 37 (h5): a loss function that returns a dict, ``{"loss": ..., "mae": ...}`` (what a
Lightning ``training_step`` returns, HF's ``outputs["loss"]``): the Trainer read a model's
own ``loss(batch)`` so, but a ``Trainer(loss=fn)`` of the user's failed at the first step,
"'dict' object has no attribute 'item'". Its ``"loss"`` is the loss now (a tuple's first
item, an object's ``.loss``, as for a model's own). The oracle: a torch 2.13 loop of
``mse_loss`` from the same weights (SGD, constant lr, the data in order)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn

LR, BATCH, EPOCHS = 0.05, 8, 2


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype("f4")
    return x, (x @ np.array([1.0, -2.0, 0.5], "f4"))[:, None] + 0.3


def _train(loss):
    skiff.seed(0)
    model = nn.Linear(3, 1)
    start = {k: np.array(v) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, loss=loss,
                            schedule="constant", clip=None, shuffle=False)
    return trainer, trainer.train(_data(), epochs=EPOCHS), start


def _torch(start):
    lin = torch.nn.Linear(3, 1).double()
    lin.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in start.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=LR, momentum=0.9)
    x, y = (torch.tensor(a, dtype=torch.float64) for a in _data())
    losses = []
    for _ in range(EPOCHS):
        for i in range(0, len(x), BATCH):
            loss = torch.nn.functional.mse_loss(lin(x[i:i + BATCH]), y[i:i + BATCH])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def _dict_loss(out, y):
    d = out - y
    return {"loss": (d * d).mean(), "mae": abs(d).mean()}


@pytest.mark.parametrize("loss", [_dict_loss, lambda out, y: (((out - y) ** 2).mean(), out)],
                         ids=["dict", "tuple"])
def test_a_loss_function_of_a_dict_trains_on_its_loss(loss):
    trainer, result, start = _train(loss)
    np.testing.assert_allclose(result.losses, _torch(start), rtol=1e-5)
    x, y = _data()
    final = trainer.evaluate((x, y))["val_loss"]
    assert final == pytest.approx(float(np.mean((trainer.predict(x) - y) ** 2)), rel=1e-5)


def test_a_loss_function_of_no_loss_says_what_it_returned():
    with pytest.raises(TypeError, match=r"the loss function must return the loss as a scalar "
                                        r"Tensor .* got dict of keys \['mae'\]"):
        _train(lambda out, y: {"mae": abs(out - y).mean()})

"""Round 30: Keras' ``fit(x, y)`` habit, ``trainer.train(x, y)`` (and ``evaluate(x, y)``),
failed with numpy's "The truth value of an array with more than one element is ambiguous"
(the targets landed in ``epochs``). It now says to pass the pair as one argument; the call
it names trains as torch 2.13 does on the same batches."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import skiff
from skiff import nn


def test_train_x_y_names_the_pair_and_the_pair_trains_as_torch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype("f4")
    y = (x[:, 0] > 0).astype("i8")
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.05, schedule="constant", clip=None,
                            batch_size=8, shuffle=False)
    with pytest.raises(TypeError, match=re.escape("train((x, y), epochs=...)")):
        trainer.train(x, y)
    with pytest.raises(TypeError, match=re.escape("train((x, y), epochs=...)")):
        trainer.train(x, y, epochs=1)  # fit(x, y, epochs=10): Python's "multiple values"
    with pytest.raises(TypeError, match=re.escape("evaluate((x, y), batch_size=...)")):
        trainer.evaluate(x, y)
    with pytest.raises(TypeError, match="epochs twice"):
        trainer.train((x, y), 1, epochs=1)
    result = trainer.train((x, y), 1)  # epochs by position, as before
    twin = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin.load_state_dict({k: torch.tensor(v) for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9)
    want = []
    for i in range(0, 40, 8):
        loss = torch.nn.functional.cross_entropy(twin(torch.tensor(x[i:i + 8])),
                                                 torch.tensor(y[i:i + 8]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        want.append(loss.item())
    np.testing.assert_allclose(result.losses, want, rtol=1e-5, atol=1e-6)

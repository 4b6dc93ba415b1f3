"""Round 37 (h5): ``Trainer(clip=0)`` is no clipping, as ``--clip 0`` on the command line,
transformers' ``max_grad_norm=0`` and Lightning's ``gradient_clip_val=0`` are; it was
refused ("clip must be positive or None"). The oracle: a torch 2.13 loop without
clipping; the gradients here are far above a norm of 1 (the default clip binds)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn

LR, BATCH = 0.01, 8


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype("f4") * 4
    return x, (x @ np.array([3.0, -2.0, 5.0], "f4"))[:, None]


def _train(**kw):
    skiff.seed(0)
    model = nn.Linear(3, 1)
    start = {k: np.array(v) for k, v in model.state_dict().items()}
    result = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH,
                           schedule="constant", shuffle=False, **kw).train(_data(), epochs=1)
    return result.losses, start


def _torch(start):
    lin = torch.nn.Linear(3, 1).double()
    lin.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in start.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=LR, momentum=0.9)
    x, y = (torch.tensor(a, dtype=torch.float64) for a in _data())
    losses = []
    for i in range(0, len(x), BATCH):
        loss = torch.nn.functional.mse_loss(lin(x[i:i + BATCH]), y[i:i + BATCH])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_clip_zero_is_no_clipping():
    losses, start = _train(clip=0)
    np.testing.assert_allclose(losses, _torch(start), rtol=1e-5)
    clipped, _ = _train()  # the default clip of 1.0 binds: another run
    assert not np.allclose(clipped, losses, rtol=1e-2)
    with pytest.raises(ValueError, match="clip must be positive, or 0 or None"):
        skiff.Trainer(nn.Linear(3, 1), clip=-1.0)

"""Round 37 (h5): a DataLoader's ``shuffle`` and ``drop_last`` are followed for that call,
as its batch size is. ``train(DataLoader(ds, batch_size=8, shuffle=False))`` (a time
series' loader) was shuffled by the Trainer, and ``drop_last=True`` trained the short last
batch. The oracle: torch 2.13's DataLoader itself (its batches, in its order) and a torch
loop over it (SGD, the same weights)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import skiff
import skiff.utils.data as sud
from skiff import nn

LR = 0.05


def _data():
    x = np.random.default_rng(0).normal(size=(20, 3)).astype("f4")
    return x, x @ np.array([[1.0], [-2.0], [0.5]], "f4")


class Spy(nn.Module):
    """A linear model that keeps the inputs of its training batches."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)
        self.seen = []

    def forward(self, x):
        if self.training:
            self.seen.append(np.array(x.numpy()))
        return self.lin(x)


def _train(loader):
    skiff.seed(0)
    model = Spy()
    start = {k.split(".")[-1]: np.array(v) for k, v in model.state_dict().items()}
    result = skiff.Trainer(model, optimizer="sgd", lr=LR, schedule="constant",
                           clip=None).train(loader, epochs=1)
    return model.seen, result.losses, start


def _torch(loader, start):
    lin = torch.nn.Linear(3, 1)
    lin.load_state_dict({k: torch.tensor(v) for k, v in start.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=LR, momentum=0.9)
    batches, losses = [], []
    for xb, yb in loader:
        batches.append(xb.numpy())
        loss = torch.nn.functional.mse_loss(lin(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return batches, losses


@pytest.mark.parametrize("drop_last", [False, True])
def test_an_unshuffled_torch_loader_trains_in_its_order(drop_last):
    x, y = _data()
    loader = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=8,
                        shuffle=False, drop_last=drop_last)
    seen, losses, start = _train(loader)
    batches, theirs = _torch(loader, start)
    assert [len(b) for b in seen] == [len(b) for b in batches] == \
        ([8, 8] if drop_last else [8, 8, 4])
    for ours, their in zip(seen, batches):
        np.testing.assert_array_equal(ours, their)
    np.testing.assert_allclose(losses, theirs, rtol=1e-5)


def test_a_shuffling_loader_is_shuffled_and_skiffs_loaders_alike():
    x, y = _data()
    loader = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=8,
                        shuffle=True)
    seen, _, _ = _train(loader)
    assert not np.array_equal(np.concatenate(seen), x)  # the Trainer's own draw
    assert sorted(np.concatenate(seen)[:, 0]) == sorted(x[:, 0])  # each row once
    pairs = list(zip(x, y))
    seen, _, _ = _train(sud.DataLoader(pairs, batch_size=8, drop_last=True))
    np.testing.assert_array_equal(np.concatenate(seen), x[:16])
    seen, _, _ = _train(skiff.data.DataLoader(skiff.data.ArrayDataset(x, y), batch_size=8,
                                              shuffle=False))
    np.testing.assert_array_equal(np.concatenate(seen), x)

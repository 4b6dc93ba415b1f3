"""Round 30 follow-ups: ``loss=nn.CrossEntropyLoss(ignore_index=pad)`` (a module, torch's
(N, C, T) layout) accumulates as a token loss: with ``grad_accum=2`` over micro-batches of
different scored-token counts one step equals torch's criterion over one large batch
(before, each micro-batch's mean counted 1/2 as a per-sample loss). Oracle: torch 2.13."""

from __future__ import annotations

import numpy as np
import torch

import skiff
from skiff import nn

V, D, T, PAD = 9, 5, 6, 0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.out = nn.Linear(D, V)

    def forward(self, x):
        return self.out(self.emb(x).tanh()).permute(0, 2, 1)  # (N, C, T) as torch's loss


class Twin(torch.nn.Module):
    def __init__(self, state):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.out = torch.nn.Linear(D, V)
        self.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in state.items()})

    def forward(self, x):
        return self.out(self.emb(x).tanh()).permute(0, 2, 1)


def padded(rows=4, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, V, (rows, T)).astype("i8")
    y = rng.integers(1, V, (rows, T)).astype("i8")
    for i, k in enumerate([T - 1, T - 1, 0, 1]):  # micro-batch 1: 2 tokens, 2: 11
        if k:
            y[i, T - k:] = PAD
    return x, y


def test_a_ce_module_with_ignore_index_accumulates_as_one_big_batch():
    x, y = padded()
    skiff.seed(0)
    model = Model()
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, loss=nn.CrossEntropyLoss(ignore_index=PAD), optimizer="sgd",
                            lr=0.5, schedule="constant", clip=None, weight_decay=0.0,
                            batch_size=2, grad_accum=2, shuffle=False, verbose=False)
    result = trainer.train((x, y), steps=1)

    twin = Twin(start)
    loss = torch.nn.CrossEntropyLoss(ignore_index=PAD)(twin(torch.tensor(x)), torch.tensor(y))
    loss.backward()
    np.testing.assert_allclose(result.losses[0], loss.item(), rtol=1e-5)
    opt = torch.optim.SGD(twin.parameters(), lr=0.5, momentum=0.9)
    opt.step()
    for name, p in twin.state_dict().items():
        np.testing.assert_allclose(np.asarray(model.state_dict()[name]), p.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_class_weighted_ce_module_accumulates_as_one_big_batch():
    """``nn.CrossEntropyLoss(weight=w, ignore_index=pad)``: torch's mean over one batch
    divides by the sum of the scored targets' weights (each micro-batch counted 1/2)."""
    x, y = padded(seed=4)
    w = np.array([1.0, 0.2, 3.0, 0.5, 1.0, 2.0, 0.1, 4.0, 1.5], "f4")
    skiff.seed(0)
    model = Model()
    start = {k: np.array(v, copy=True) for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, loss=nn.CrossEntropyLoss(weight=w, ignore_index=PAD),
                            optimizer="sgd", lr=0.5, schedule="constant", clip=None,
                            weight_decay=0.0, batch_size=2, grad_accum=2, shuffle=False,
                            verbose=False)
    result = trainer.train((x, y), steps=1)

    twin = Twin(start)
    loss = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=PAD)(
        twin(torch.tensor(x)), torch.tensor(y))
    loss.backward()
    np.testing.assert_allclose(result.losses[0], loss.item(), rtol=1e-5)
    torch.optim.SGD(twin.parameters(), lr=0.5, momentum=0.9).step()
    for name, p in twin.state_dict().items():
        np.testing.assert_allclose(np.asarray(model.state_dict()[name]), p.numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)

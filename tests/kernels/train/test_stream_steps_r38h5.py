"""Round 38 (h5): a stream (an ``IterableDataset``, a generator) under ``train(...,
steps=N)`` is read only as far as N steps use (``N x grad_accum x batch_size`` samples, more
by the held-out share of ``val_split``), as transformers' ``max_steps`` over an
``IterableDataset`` and a torch loop that breaks after N steps read it. Before, the whole
stream was read into memory first: 300,000 samples (1.6 s of CPU) for 5 steps of 32, and an
endless generator was read to 2^22 samples, then refused. The oracle: a torch 2.13 loop of
N steps over ``DataLoader(stream, batch_size=...)`` from the same weights."""

from __future__ import annotations

import itertools

import numpy as np
import torch

import skiff
from skiff import nn

LR, BATCH, STEPS = 0.05, 8, 5


class Endless(torch.utils.data.IterableDataset):
    """Samples for ever, counting how many were read."""

    def __init__(self):
        self.read = 0

    def __iter__(self):
        rng = np.random.default_rng(0)
        while True:
            x = rng.normal(size=3).astype("f4")
            self.read += 1
            yield x, np.array([x @ np.array([1.0, -2.0, 0.5], "f4") + 0.3], "f4")


def _models():
    skiff.seed(0)
    ours = nn.Linear(3, 1)
    twin = torch.nn.Linear(3, 1)
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in ours.state_dict().items()})
    return ours, twin


def _torch(twin, steps, accum=1):
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    batches = iter(torch.utils.data.DataLoader(Endless(), batch_size=BATCH))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        total = 0.0
        for x, y in itertools.islice(batches, accum):
            loss = torch.nn.functional.mse_loss(twin(x), y) / accum
            loss.backward()
            total += loss.item()
        opt.step()
        losses.append(total)
    return losses


def test_an_endless_stream_trains_its_steps_reading_only_what_they_use():
    ours, twin = _models()
    stream = Endless()
    result = skiff.Trainer(ours, optimizer="sgd", lr=LR, batch_size=BATCH, clip=None,
                           schedule="constant", shuffle=False).train(stream, steps=STEPS)
    assert stream.read == STEPS * BATCH
    np.testing.assert_allclose(result.losses, _torch(twin, STEPS), rtol=1e-5)


def test_grad_accum_and_val_split_read_their_share_too():
    ours, twin = _models()
    stream = Endless()
    loader = torch.utils.data.DataLoader(stream, batch_size=BATCH)
    result = skiff.Trainer(ours, optimizer="sgd", lr=LR, clip=None, schedule="constant",
                           shuffle=False, grad_accum=2).train(loader, steps=3, val_split=0.2)
    assert stream.read == 60  # 3 x 2 x 8 = 48 training samples, and 12 held out (a fifth)
    np.testing.assert_allclose(result.losses, _torch(twin, 3, accum=2), rtol=1e-5)
    assert result.val_history and result.val_history[-1]["step"] == 3


def test_a_torch_loader_over_an_iterable_dataset_trains_in_its_order():
    """``train(DataLoader(iterable, batch_size=8), epochs=2)`` was refused ("a torch
    DataLoader with its own sampler and iterable dataset"): now its samples in their order
    (torch cannot shuffle one), at its batch size, every epoch, as a torch loop over it."""
    class Finite(torch.utils.data.IterableDataset):
        def __iter__(self):
            return itertools.islice(iter(Endless()), 20)

    ours, twin = _models()
    loader = torch.utils.data.DataLoader(Finite(), batch_size=BATCH)
    result = skiff.Trainer(ours, optimizer="sgd", lr=LR, clip=None,
                           schedule="constant").train(loader, epochs=2)
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    losses = []
    for _ in range(2):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(twin(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert len(losses) == 6  # batches of 8, 8 and 4, twice
    np.testing.assert_allclose(result.losses, losses, rtol=1e-5)


def test_skiffs_own_dataloader_over_a_stream_reads_it():
    """``skiff.data.DataLoader(iterable, batch_size=8)`` failed in its constructor, "object
    of type 'Finite' has no len()"; it reads the stream's samples, as the Trainer does."""
    class Finite(torch.utils.data.IterableDataset):
        def __iter__(self):
            return itertools.islice(iter(Endless()), 16)

    ours, twin = _models()
    loader = skiff.data.DataLoader(Finite(), batch_size=BATCH, shuffle=False)
    result = skiff.Trainer(ours, optimizer="sgd", lr=LR, clip=None,
                           schedule="constant").train(loader, steps=2)
    np.testing.assert_allclose(result.losses, _torch(twin, 2), rtol=1e-5)

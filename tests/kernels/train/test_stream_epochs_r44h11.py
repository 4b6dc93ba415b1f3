"""Round 44 (h11): an ``IterableDataset`` under ``epochs`` > 1 is read again each epoch, as
torch's ``DataLoader`` calls its ``__iter__`` each epoch (float64, against torch 2.13's loop).

The Trainer read one pass and replayed it: a dataset drawing fresh augmentations from its
own generator gave epoch 1's to every epoch, and one reshuffling its shards by ``set_epoch``
(Hugging Face's ``IterableDataset``, which transformers' Trainer calls each epoch) read
epoch 0's order three times. And a stream was shuffled pass by pass by the Trainer's default
``shuffle``, where torch's DataLoader refuses ``shuffle=True`` over an IterableDataset and
transformers and Keras read one in its order: the default now reads a stream in its order
(``shuffle=True`` given still shuffles each pass). A run cut mid-epoch and resumed reads its
epoch's pass again and goes on after the batches it had taken. A pass of another length is
one epoch however long (round 45 h5; it was refused); a generator (one pass) still replays,
said (round 42's test).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402
from skiff.kernels.backend.report import NullReporter  # noqa: E402

N = 10  # 3 batches of 4, 4, 2 an epoch
RNG = np.random.default_rng(44)
X = RNG.standard_normal((N, 3))
Y = X @ np.array([[1.0], [-2.0], [0.5]]) + 0.1


class Noisy(torch.utils.data.IterableDataset):
    """Fresh noise each pass, from its own generator (an augmentation)."""

    def __init__(self):
        self.rng, self.passes = np.random.default_rng(5), 0

    def __iter__(self):
        self.passes += 1
        for i in range(N):
            yield torch.tensor(X[i] + 0.3 * self.rng.standard_normal(3)), torch.tensor(Y[i])


class Shards(torch.utils.data.IterableDataset):
    """Rows in an order drawn from the epoch set by ``set_epoch`` (shards reshuffled)."""

    def __init__(self):
        self.epoch, self.passes = 0, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        self.passes += 1
        for i in np.random.default_rng(self.epoch).permutation(N):
            yield torch.tensor(X[i]), torch.tensor(Y[i])


def _first():
    skiff.manual_seed(0)
    return nn.Linear(3, 1).double()


def _torch_losses(ds, epochs):
    w0 = _first().state_dict()
    lin = torch.nn.Linear(3, 1, dtype=torch.float64)
    lin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in w0.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    losses = []
    for epoch in range(epochs):
        if hasattr(ds, "set_epoch"):  # what transformers' Trainer does before each epoch
            ds.set_epoch(epoch)
        for xb, yb in torch.utils.data.DataLoader(ds, batch_size=4):
            loss = torch.nn.functional.mse_loss(lin(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


class Logs(NullReporter):
    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append(message)


def _skiff(ds, ck=None, stop=None, resume=False, **kw):
    trainer = skiff.Trainer(_first(), optimizer=lambda p: skiff.optim.SGD(p, lr=0.1),
                            loss="mse", batch_size=4, clip=None, **kw,
                            schedule="constant", checkpoint_dir=ck,
                            checkpoint_every=1 if ck else None, resume=resume,
                            callbacks=[lambda m: m["step"] >= stop] if stop else None)
    return [h["loss"] for h in trainer.train(ds, epochs=3).history]


def test_each_epoch_draws_its_own_augmentations_as_torch():
    want = _torch_losses(Noisy(), 3)
    ds = Noisy()
    got = _skiff(ds)  # shuffle left as it is: a stream in its own order, as torch's loader
    assert ds.passes == 3  # __iter__ once an epoch, as torch's loader (1 before)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)  # 9 steps (epoch 2: 0.2 off)


def test_set_epoch_reshuffles_and_a_resume_mid_epoch_reads_its_pass(tmp_path):
    want = _torch_losses(Shards(), 3)
    np.testing.assert_allclose(_skiff(Shards(), shuffle=False), want, rtol=0, atol=1e-12)
    cut = _skiff(Shards(), tmp_path, stop=5, shuffle=False)  # batch 2 of epoch 2
    ds, logs = Shards(), Logs()
    # the history: the cut run's rows, then on
    whole = _skiff(ds, tmp_path, resume=True, shuffle=False, reporter=logs)
    assert any("epoch 2's pass is read again from its start (__iter__, and set_epoch(1)" in
               line and "its first 8 samples (2 batches) skipped" in line
               for line in logs.lines), logs.lines
    assert len(cut) == 5 and ds.passes == 3  # epoch 0's read, epoch 1's again, epoch 2's
    np.testing.assert_allclose(whole, want, rtol=0, atol=1e-12)
    # a pass of another length (refused here, round 44): one epoch however long, as
    # torch's loop takes it (round 45 h5, test_torch_port_r45h5.py)
    np.testing.assert_allclose(_skiff(Shrinking(), shuffle=False),
                               _torch_losses(Shrinking(), 3), rtol=0, atol=1e-12)


class Shrinking(Shards):
    """One row fewer from the second pass on."""

    def __iter__(self):
        self.passes += 1
        for i in range(N if self.passes == 1 else N - 1):
            yield torch.tensor(X[i]), torch.tensor(Y[i])

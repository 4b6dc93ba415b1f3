"""Round 45 (h5): torch scripts ported, step by step against torch 2.13 (float64).

- A stream (``IterableDataset``) whose passes differ in length trained under ``epochs=`` was
  refused ("yielded 9 samples in epoch 2, where its first pass had 10"): torch's loop trains
  each pass as it comes. An epoch is now one pass however long, the run's end re-planned at
  each pass, a resume mid-pass included.
- A torch ``DataLoader`` over an ``IterableDataset`` with its own ``collate_fn`` (padding
  sequences of other lengths) was refused: its batches are now the loader's, as torch
  yields them.
- A stream that draws from its own state (a generator kept across passes) resumed on other
  samples than the uninterrupted run: with ``state_dict()``/``load_state_dict()``
  (torchdata's ``StatefulDataLoader`` convention) the checkpoint keeps its state at the
  pass's start and the resumed run equals the uninterrupted one.
- Under ZeRO, a user's optimizer of parameter groups of other ``lr`` was refused: each
  element of the flat slice now steps at its group's lr (2 ranks: ``parallel/
  test_same_data_r29.py``'s launch).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402
from skiff.kernels.backend.report import NullReporter  # noqa: E402
from skiff.kernels.train.parallel import SelfComm  # noqa: E402
from skiff.kernels.train.parallel.data_parallel import ZeRO  # noqa: E402

N = 10
RNG = np.random.default_rng(45)
X = RNG.standard_normal((N, 3))
Y = X @ np.array([[1.0], [-2.0], [0.5]]) + 0.1


class Logs(NullReporter):
    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append(message)


class Varying(torch.utils.data.IterableDataset):
    """Passes of 10, 7 and 13 samples (a stream that filters by the epoch), set_epoch'd."""

    def __init__(self):
        self.epoch, self.passes = 0, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        self.passes += 1
        order = np.random.default_rng(self.epoch).permutation(N)
        rows = [order[:10], order[:7], np.r_[order, order[:3]]][self.epoch % 3]
        for i in rows:
            yield torch.tensor(X[i]), torch.tensor(Y[i])


class Drawn(torch.utils.data.IterableDataset):
    """Draws each pass's length, rows and noise from its own generator, kept across passes;
    its state as torchdata's StatefulDataLoader reads a dataset's."""

    def __init__(self):
        self.rng = np.random.default_rng(9)

    def __iter__(self):
        for i in self.rng.integers(0, N, int(self.rng.integers(6, 14))):
            yield torch.tensor(X[i] + 0.1 * self.rng.standard_normal(3)), torch.tensor(Y[i])

    def state_dict(self):
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state):
        self.rng.bit_generator.state = state["rng"]


def _first():
    skiff.manual_seed(0)
    return nn.Linear(3, 1).double()


def _torch_losses(ds, epochs=3):
    lin = torch.nn.Linear(3, 1, dtype=torch.float64)
    lin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in _first().state_dict().items()})
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    losses = []
    for epoch in range(epochs):
        if hasattr(ds, "set_epoch"):
            ds.set_epoch(epoch)
        for xb, yb in torch.utils.data.DataLoader(ds, batch_size=4):
            loss = torch.nn.functional.mse_loss(lin(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def _skiff(ds, ck=None, stop=None, resume=False, reporter=None):
    trainer = skiff.Trainer(_first(), optimizer=lambda p: skiff.optim.SGD(p, lr=0.1),
                            loss="mse", batch_size=4, clip=None, schedule="constant",
                            checkpoint_dir=ck, checkpoint_every=1 if ck else None,
                            resume=resume, reporter=reporter,
                            callbacks=[lambda m: m["step"] >= stop] if stop else None)
    return [h["loss"] for h in trainer.train(ds, epochs=3).history]


def test_passes_of_other_lengths_are_epochs_as_torch_and_resume_mid_pass(tmp_path):
    want = _torch_losses(Varying())  # 3 + 2 + 4 steps
    logs = Logs()
    np.testing.assert_allclose(_skiff(Varying(), reporter=logs), want, rtol=0, atol=1e-12)
    assert any("epoch 2's pass of the stream yielded 7 samples (2 steps; the first pass had "
               "10)" in line and "end at step 7" in line for line in logs.lines), logs.lines
    cut = _skiff(Varying(), tmp_path, stop=4)  # batch 1 of epoch 2's pass of 7
    ds = Varying()
    whole = _skiff(ds, tmp_path, resume=True)
    assert len(cut) == 4 and ds.passes == 3  # epoch 0's read, epoch 1's again, epoch 2's
    np.testing.assert_allclose(whole, want, rtol=0, atol=1e-12)


def test_a_stateful_stream_resumes_on_the_uninterrupted_runs_samples(tmp_path):
    want = _torch_losses(Drawn())  # passes of 9, 10 and 13 samples drawn
    assert len(want) == 10
    assert len(_skiff(Drawn(), tmp_path, stop=7)) == 7  # batch 1 of the third pass
    logs = Logs()
    whole = _skiff(Drawn(), tmp_path, resume=True, reporter=logs)
    np.testing.assert_allclose(whole, want, rtol=0, atol=1e-12)
    assert any("state at the pass's start was put back" in line for line in logs.lines)


def test_a_torch_loader_over_a_stream_with_its_own_collate_fn():
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((int(rng.integers(2, 6)), 3)) for _ in range(11)]
    targets = [0.1 * float(s.sum()) for s in seqs]

    class Seqs(torch.utils.data.IterableDataset):
        def __iter__(self):
            for s, t in zip(seqs, targets):
                yield torch.tensor(s), torch.tensor([t])

    def pad(items):  # sequences of other lengths, zero-padded to the batch's longest
        x = torch.zeros(len(items), max(len(s) for s, _ in items), 3, dtype=torch.float64)
        for i, (s, _) in enumerate(items):
            x[i, :len(s)] = s
        return x, torch.stack([t for _, t in items])

    class Pooled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 1)

        def forward(self, x):
            return self.lin(x.sum(1))

    skiff.manual_seed(0)
    model = Pooled().double()
    lin = torch.nn.Linear(3, 1, dtype=torch.float64)
    lin.load_state_dict({k[4:]: torch.tensor(np.asarray(v))
                         for k, v in model.state_dict().items()})
    opt = torch.optim.SGD(lin.parameters(), lr=0.05)
    want = []
    for _ in range(2):
        for xb, yb in torch.utils.data.DataLoader(Seqs(), batch_size=4, collate_fn=pad):
            loss = torch.nn.functional.mse_loss(lin(xb.sum(1)), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            want.append(loss.item())
    trainer = skiff.Trainer(model, optimizer=lambda p: skiff.optim.SGD(p, lr=0.05),
                            loss="mse", clip=None, schedule="constant")
    loader = torch.utils.data.DataLoader(Seqs(), batch_size=4, collate_fn=pad)
    got = [h["loss"] for h in trainer.train(loader, epochs=2).history]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)  # batches of 4, 4, 3
    np.testing.assert_allclose(np.asarray(model.lin.weight.numpy()),
                               lin.weight.detach().numpy(), rtol=0, atol=1e-12)
    with torch.no_grad():  # evaluate over the same loader: the mean over its 11 rows
        xs = [xb.sum(1) for xb, _ in torch.utils.data.DataLoader(Seqs(), batch_size=4,
                                                                 collate_fn=pad)]
        val = torch.nn.functional.mse_loss(lin(torch.cat(xs)),
                                           torch.tensor(targets)[:, None]).item()
    assert trainer.evaluate(loader)["val_loss"] == pytest.approx(val, rel=1e-12)


ZX = RNG.standard_normal((24, 4))
ZY = np.tanh(ZX @ RNG.standard_normal((4, 2)))


def _zmodel():
    skiff.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, 2)).double()


def _two_lrs(lib, named, kind):
    """The body at 0.05 without decay on its norm, the head at 0.01 (and decay 0.3)."""
    groups = [{"params": [p for n, p in named if not n.startswith("3.")], "lr": 0.05,
               "weight_decay": 0.0},
              {"params": [p for n, p in named if n.startswith("3.")], "lr": 0.01,
               "weight_decay": 0.3}]
    if kind == "adamw":
        return lib.optim.AdamW(groups)
    return lib.optim.SGD(groups, momentum=0.9, nesterov=True)


@pytest.mark.parametrize("kind", ["adamw", "sgd"])
def test_zero_steps_groups_of_other_lrs_as_torch(kind):
    m = _zmodel()
    init = {k: torch.tensor(np.array(v)) for k, v in m.state_dict().items()}
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict(init)
    opt = _two_lrs(torch, list(tm.named_parameters()), kind)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 / (1 + s))
    x, y = torch.tensor(ZX), torch.tensor(ZY)
    for s in range(6):
        loss = torch.nn.functional.mse_loss(tm(x[(s % 3) * 8:(s % 3) * 8 + 8]),
                                            y[(s % 3) * 8:(s % 3) * 8 + 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    sopt = _two_lrs(skiff, list(m.named_parameters()), kind)
    skiff.Trainer(m, strategy=ZeRO(2, SelfComm()), optimizer=sopt, loss="mse", batch_size=8,
                  shuffle=False, clip=None,
                  schedule=lambda o: skiff.optim.lr_scheduler.LambdaLR(
                      o, lambda s: 1.0 / (1 + s))).train((ZX, ZY), steps=6)
    for k, w in tm.state_dict().items():
        np.testing.assert_allclose(np.asarray(m.state_dict()[k]), w.numpy(), rtol=0,
                                   atol=1e-12, err_msg=k)


def test_subset_random_samplers_split_train_and_validation_as_torch():
    """torch's train/validation idiom: one dataset, two loaders of SubsetRandomSampler(idx)
    (refused, naming loader.dataset: which trained on the validation rows too)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((30, 5))
    y = (x[:, 0] + 0.5 * x[:, 1] > 0.3).astype(np.int64)
    ds = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    train_idx, val_idx = list(range(0, 30, 3)) + list(range(1, 30, 3)), list(range(2, 30, 3))

    def loaders():
        g = torch.Generator().manual_seed(1)
        sampler = torch.utils.data.SubsetRandomSampler
        return (torch.utils.data.DataLoader(ds, batch_size=4, sampler=sampler(train_idx, g)),
                torch.utils.data.DataLoader(ds, batch_size=4, sampler=sampler(val_idx)))

    skiff.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    opt = torch.optim.SGD(tm.parameters(), lr=0.1)
    train, val = loaders()
    want, val_want = [], []
    for _ in range(2):
        for xb, yb in train:
            loss = torch.nn.functional.cross_entropy(tm(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            want.append(loss.item())
        with torch.no_grad():
            val_want.append(torch.nn.functional.cross_entropy(
                tm(torch.tensor(x[val_idx])), torch.tensor(y[val_idx])).item())
    train, val = loaders()
    result = skiff.Trainer(model, optimizer=lambda p: skiff.optim.SGD(p, lr=0.1),
                           loss="cross_entropy", clip=None, schedule="constant").train(
        train, epochs=2, val_dataset=val)
    np.testing.assert_allclose([h["loss"] for h in result.history], want, rtol=0, atol=1e-12)
    np.testing.assert_allclose([h["val_loss"] for h in result.val_history], val_want, rtol=0,
                               atol=1e-12)
    # skiff.utils.data's loader of the same samplers: the subsets' rows, as their arrays
    from skiff.utils.data import DataLoader, SubsetRandomSampler, TensorDataset

    own = TensorDataset(skiff.tensor(x), skiff.tensor(y))
    runs = []
    for data, val in (((DataLoader(own, batch_size=4, sampler=SubsetRandomSampler(train_idx)),
                        DataLoader(own, batch_size=4, sampler=SubsetRandomSampler(val_idx)))),
                      ((x[train_idx], y[train_idx]), (x[val_idx], y[val_idx]))):
        skiff.manual_seed(0)
        net = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        runs.append(skiff.Trainer(net, loss="cross_entropy", batch_size=4).train(
            data, epochs=2, val_dataset=val))
    assert [h["loss"] for h in runs[0].history] == [h["loss"] for h in runs[1].history]
    assert runs[0].val_history[-1]["val_loss"] == runs[1].val_history[-1]["val_loss"]
    ddp = torch.utils.data.DataLoader(ds, batch_size=4, sampler=torch.utils.data.
                                      DistributedSampler(ds, num_replicas=2, rank=0))
    # round 46 h7: followed (its replicas' batches of 4 together one batch of 8), not
    # refused: test_dist_sampler_r46h7.py checks it against torch's DDP loop
    assert len(skiff.Trainer(model).train(ddp, epochs=1).history) == 4  # 15 a replica: 4 x 4


def test_a_scheduler_stepped_once_an_epoch_as_torchs_loop(tmp_path):
    """torch's ImageNet example steps StepLR after each epoch (Lightning's default interval
    too); skiff stepped it after every optimizer step: the lr cut 2 steps in, not 2 epochs.
    ``schedule_interval="epoch"``; a run cut mid-epoch and resumed goes on alike."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((30, 5))
    y = (x[:, 0] - x[:, 2] > 0).astype(np.int64)

    def first():
        skiff.manual_seed(0)
        return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)).double()

    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in first().state_dict().items()})
    opt = torch.optim.SGD(tm.parameters(), lr=0.2, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.1)
    want, lrs = [], []
    for _ in range(5):  # 4 batches an epoch (8, 8, 8, 6)
        for i in range(0, 30, 8):
            loss = torch.nn.functional.cross_entropy(tm(torch.tensor(x[i:i + 8])),
                                                     torch.tensor(y[i:i + 8]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            want.append(loss.item())
            lrs.append(opt.param_groups[0]["lr"])
        sched.step()

    def run(ck=None, stop=None, resume=False):
        return skiff.Trainer(
            first(), optimizer=lambda p: skiff.optim.SGD(p, lr=0.2, momentum=0.9),
            schedule=lambda o: skiff.optim.lr_scheduler.StepLR(o, 2, 0.1),
            schedule_interval="epoch", loss="cross_entropy", clip=None, batch_size=8,
            shuffle=False, checkpoint_dir=ck, checkpoint_every=5 if ck else None,
            resume=resume, callbacks=[lambda m: m["step"] >= stop] if stop else None,
        ).train((x, y), epochs=5).history

    got = run()
    np.testing.assert_allclose([h["loss"] for h in got], want, rtol=0, atol=1e-12)
    assert [h["lr"] for h in got] == pytest.approx(lrs, rel=1e-12)
    run(tmp_path, stop=10)  # batch 2 of epoch 3
    np.testing.assert_allclose([h["loss"] for h in run(tmp_path, resume=True)], want, rtol=0,
                               atol=1e-12)
    with pytest.raises(ValueError, match="schedule='cosine' is planned in optimizer steps"):
        skiff.Trainer(first(), schedule_interval="epoch")
    # Lightning's configure_optimizers config (interval "epoch" by default): the same
    model = first()
    sgd = skiff.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    config = {"scheduler": skiff.optim.lr_scheduler.StepLR(sgd, 2, 0.1), "interval": "epoch"}
    got = skiff.Trainer(model, optimizer=sgd, schedule=config, loss="cross_entropy",
                        clip=None, batch_size=8, shuffle=False).train((x, y), epochs=5)
    np.testing.assert_allclose([h["loss"] for h in got.history], want, rtol=0, atol=1e-12)

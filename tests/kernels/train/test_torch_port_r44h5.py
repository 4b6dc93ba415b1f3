"""Round 44 (h5): torch scripts ported to the Trainer, against torch 2.13 step by step
(float64, the same first weights, the same batches).

- A model of two outputs trained on items ``(x, (y1, y2))`` with a summed loss
  ``loss=fn(output, target)``: torch's default_collate collates the nested target into
  ``[y1s, y2s]``; the Trainer's collate refused it ("inhomogeneous shape"), moving it to the
  device too, and evaluate's accuracy read ``target.dtype`` of a tuple.
- ``train(epochs=3)`` resumed with another batch size: 2 steps of 8 rows of 21, resumed at
  batch 4, ran 18 steps (3 x 6 at the new size) and trained rows 0-7 of a fourth epoch.
- ``decay_bias_norm=False``: transformers' and nanoGPT's habit of leaving biases and norm
  scales out of weight decay (torch's AdamW, skiff's default, decays every parameter), against
  ``torch.optim.AdamW`` with two groups; the command line's ``--no-bias-norm-decay``.
- ``val_split=`` on a torch loader shuffling from the user's generator: the last quarter is
  held out (Keras' ``validation_split``, said) and the training rows were read in skiff's
  own order; now in torch's ``DataLoader(Subset(ds, range(n_train)), shuffle=True,
  generator=g)`` order.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402

RNG = np.random.default_rng(44)
X = RNG.standard_normal((21, 5))
Y1 = RNG.integers(0, 3, 21)
Y2 = RNG.standard_normal((21, 1))


def _twin(model, ref):
    ref.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    return ref


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.a, self.b = nn.Linear(5, 4), nn.Linear(4, 3), nn.Linear(4, 1)

    def forward(self, x):
        h = self.body(x).tanh()
        return self.a(h), self.b(h)


class Pairs(torch.utils.data.Dataset):
    def __len__(self):
        return len(X)

    def __getitem__(self, i):
        return torch.tensor(X[i]), (int(Y1[i]), torch.tensor(Y2[i]))


def test_two_outputs_and_a_nested_target_train_as_torch():
    skiff.manual_seed(0)
    model = Two().double()
    ref = _twin(model, torch.nn.ModuleDict({"body": torch.nn.Linear(5, 4, dtype=torch.float64),
                                            "a": torch.nn.Linear(4, 3, dtype=torch.float64),
                                            "b": torch.nn.Linear(4, 1, dtype=torch.float64)}))
    ce, mse = nn.CrossEntropyLoss(), nn.MSELoss()

    def loss(out, target):
        y1, y2 = target
        return ce(out[0], y1) + 0.5 * mse(out[1], y2)

    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, loss=loss, batch_size=8,
                            shuffle=False, clip=None, schedule="constant")
    got = [h["loss"] for h in trainer.train(torch.utils.data.DataLoader(Pairs(), batch_size=8),
                                            epochs=2).history]
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)

    def torch_loss(lo, hi):
        h = ref["body"](torch.tensor(X[lo:hi])).tanh()
        return (torch.nn.functional.cross_entropy(ref["a"](h), torch.tensor(Y1[lo:hi]))
                + 0.5 * torch.nn.functional.mse_loss(ref["b"](h), torch.tensor(Y2[lo:hi])))

    want = []
    for _ in range(2):
        for i in range(0, 21, 8):
            value = torch_loss(i, i + 8)
            opt.zero_grad()
            value.backward()
            opt.step()
            want.append(value.item())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    with torch.no_grad():
        whole = torch_loss(0, 21).item()
    assert trainer.evaluate(Pairs())["val_loss"] == pytest.approx(whole, abs=1e-12)
    logits, value = trainer.predict(X)  # one array per output, as Keras' predict
    with torch.no_grad():
        h = ref["body"](torch.tensor(X)).tanh()
        want_logits, want_value = ref["a"](h).numpy(), ref["b"](h).numpy()
    np.testing.assert_allclose(logits, want_logits, atol=1e-12)
    np.testing.assert_allclose(value, want_value, atol=1e-12)


def test_a_resume_at_another_batch_size_ends_where_the_epochs_end(tmp_path):
    y = Y1

    def run(batch, stop=None, resume=False):
        skiff.manual_seed(0)
        model = nn.Linear(5, 3).double()
        trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, batch_size=batch,
                                shuffle=False, clip=None, schedule="constant",
                                checkpoint_dir=tmp_path, checkpoint_every=1, resume=resume,
                                callbacks=[lambda m: m["step"] >= stop] if stop else None)
        return model, trainer.train((X, y), epochs=3)

    skiff.manual_seed(0)
    ref = _twin(nn.Linear(5, 3).double(), torch.nn.Linear(5, 3, dtype=torch.float64))
    run(8, stop=2)  # rows 0-15 at batch 8
    with pytest.warns(UserWarning, match="resumed with batch_size 4"):
        model, result = run(4, resume=True)
    # torch: the 2 steps of 8, the epoch's rows left at 4 (16-19, 20), then 2 epochs of 4
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    cuts = [(0, 8), (8, 16), (16, 20), (20, 21)] + [(i, i + 4) for i in range(0, 21, 4)] * 2
    for lo, hi in cuts:
        value = torch.nn.functional.cross_entropy(ref(torch.tensor(X[lo:hi])),
                                                  torch.tensor(y[lo:hi]))
        opt.zero_grad()
        value.backward()
        opt.step()
    assert result.steps == len(cuts) == 16  # it ran 18, into a fourth epoch
    assert result.history[-1]["epoch"] == pytest.approx(3.0)
    np.testing.assert_allclose(model.weight.numpy(), ref.weight.detach().numpy(), atol=1e-12)


def test_no_decay_on_biases_and_norms_is_torchs_adamw_with_two_groups():
    def models():
        skiff.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 8), nn.LayerNorm(8), nn.ReLU(),
                              nn.Linear(8, 3)).double()
        ref = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.LayerNorm(8),
                                  torch.nn.ReLU(), torch.nn.Linear(8, 3)).double()
        return model, _twin(model, ref)

    def torch_run(ref, groups):
        opt = torch.optim.AdamW(groups, lr=0.05, weight_decay=0.3)
        for _ in range(2):
            for i in range(0, 21, 8):
                value = torch.nn.functional.cross_entropy(ref(torch.tensor(X[i:i + 8])),
                                                          torch.tensor(Y1[i:i + 8]))
                opt.zero_grad()
                value.backward()
                opt.step()
        return ref.state_dict()

    for keep in (False, True):
        model, ref = models()
        trainer = skiff.Trainer(model, lr=0.05, weight_decay=0.3, decay_bias_norm=keep,
                                batch_size=8, shuffle=False, clip=None, schedule="constant")
        trainer.train((X, Y1), epochs=2)
        params = list(ref.parameters())
        groups = params if keep else [{"params": [p for p in params if p.ndim >= 2]},
                                      {"params": [p for p in params if p.ndim < 2],
                                       "weight_decay": 0.0}]
        want = torch_run(ref, groups)
        for name, value in model.state_dict().items():
            np.testing.assert_allclose(np.asarray(value), want[name].numpy(), atol=1e-12,
                                       err_msg=f"decay_bias_norm={keep}: {name}")


def test_the_command_line_flag_reaches_the_jobs_optimizer(runs_dir, monkeypatch):
    import skiff.kernels.train.entry as entry
    from skiff.jobs.launch import dry_run
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.trainer import Trainer as Real

    made = []

    class Spy(Real):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            made.append(self)

    monkeypatch.setattr("skiff.kernels.train.trainer.Trainer", Spy)
    config = dry_run("train", "mlp --steps 1 --no-bias-norm-decay", front="cli")["config"]
    assert config["decay_bias_norm"] is False
    assert "decay_bias_norm" not in dry_run("train", "mlp", front="cli")["config"]
    entry.run(config, NullReporter())
    groups = made[0].optimizer.param_groups
    assert [g["weight_decay"] for g in groups] == [0.01, 0.0]
    assert {len(p.shape) for p in groups[0]["params"]} == {2}
    assert {len(p.shape) for p in groups[1]["params"]} == {1}


N, B = 12, 4


class Logged(torch.utils.data.Dataset):
    def __init__(self):
        self.read = []

    def __len__(self):
        return N

    def __getitem__(self, i):
        self.read.append(int(i))
        return torch.tensor(X[i, :3]), int(Y1[i] % 2)


def test_val_split_of_a_loader_with_a_generator_reads_the_training_rows_in_its_order():
    ds, ref = Logged(), Logged()
    skiff.manual_seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 2).double(), optimizer="sgd", lr=0.1, clip=None,
                            schedule="constant")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainer.train(torch.utils.data.DataLoader(ds, batch_size=B, shuffle=True,
                                                  generator=torch.Generator().manual_seed(7)),
                      epochs=2, val_split=0.25)
    held = sorted({i for i in ds.read if i >= 9})
    assert held == [9, 10, 11]  # the last quarter, as Keras' validation_split
    loader = torch.utils.data.DataLoader(torch.utils.data.Subset(ref, range(9)), batch_size=B,
                                         shuffle=True, generator=torch.Generator().manual_seed(7))
    for _ in range(2):
        for _ in loader:
            pass
    assert [i for i in ds.read if i < 9] == ref.read


class Endless(torch.utils.data.IterableDataset):
    """An endless stream of samples of 3 + 1 float32 (16 bytes of data each)."""

    def __init__(self):
        self.count = 0

    def __iter__(self):
        x = np.ones(3, "f4")
        while True:
            self.count += 1
            if self.count > 60_000:  # the old bound read on (262,144 here, 4,194,304 free)
                raise AssertionError("read past the memory bound")
            yield x.copy(), x[:1].copy()


def test_an_endless_iterable_dataset_is_refused_at_its_samples_real_memory(monkeypatch):
    """The memory bound counted the data alone (16 bytes a sample) where the list held
    ~440 bytes each: 4,194,304 samples, 1.8 GB and 9.4 CPU s before the count bound
    refused an endless ``IterableDataset`` under ``epochs=2``. Machine memory given: 8 MiB
    free, so half of it holds 14,000 samples of ~300 bytes (objects counted)."""
    from skiff.kernels.train import data_stream

    monkeypatch.setattr(data_stream, "_available_bytes", lambda: 8 * 2**20)
    ds = Endless()
    with pytest.raises(ValueError, match=r"yields more than 1\d,\d{3} samples.*steps=N"):
        skiff.Trainer(nn.Linear(3, 1), batch_size=8).train(ds, epochs=2)
    assert ds.count < 20_000


class Inputs(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return {"x": torch.tensor(X[i])}


class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc, self.dec = nn.Linear(5, 2), nn.Linear(2, 5)

    def forward(self, x):
        return self.dec(self.enc(x).relu())


def test_an_autoencoder_on_dict_items_of_inputs_alone_is_told_its_loss():
    """Items ``{"x": x}`` with ``loss="mse"`` were refused naming the keys only; the line
    now names ``model.loss(batch)``, and that way trains as the torch loop
    ``mse(model(b["x"]), b["x"])`` does."""
    skiff.manual_seed(0)
    model = AE().double()
    with pytest.raises(TypeError, match=r"got keys \['x'\]; items of inputs alone .*"
                                        r"def loss\(self, batch\)"):
        skiff.Trainer(model, loss="mse", batch_size=8).train(Inputs(), epochs=1)

    class Own(AE):
        def loss(self, batch):
            return nn.functional.mse_loss(self(batch["x"]), batch["x"])

    skiff.manual_seed(0)
    model = Own().double()
    ref = _twin(model, torch.nn.ModuleDict({"enc": torch.nn.Linear(5, 2, dtype=torch.float64),
                                            "dec": torch.nn.Linear(2, 5, dtype=torch.float64)}))
    got = skiff.Trainer(model, optimizer="sgd", lr=0.1, batch_size=8, shuffle=False, clip=None,
                        schedule="constant").train(Inputs(), epochs=2).history
    opt, want = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9), []
    for _ in range(2):
        for batch in torch.utils.data.DataLoader(Inputs(), batch_size=8):
            x = batch["x"]
            value = torch.nn.functional.mse_loss(ref["dec"](ref["enc"](x).relu()), x)
            opt.zero_grad()
            value.backward()
            opt.step()
            want.append(value.item())
    np.testing.assert_allclose([h["loss"] for h in got], want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_weight_decay_reaches_the_sgd_and_adam_built_ins_as_torchs(name):
    """``Trainer(optimizer="sgd", weight_decay=5e-2)`` trained without the decay (SGD was
    built without it; "adam" was AdamW of decay 0), silently; torch's SGD and Adam take
    ``weight_decay`` as L2. Left out, both stay at torch's default 0."""
    for decay in (0.05, None):
        skiff.manual_seed(0)
        model = nn.Linear(5, 3).double()
        ref = _twin(model, torch.nn.Linear(5, 3, dtype=torch.float64))
        skiff.Trainer(model, optimizer=name, lr=0.1, weight_decay=decay, batch_size=8,
                      shuffle=False, clip=None, schedule="constant").train((X, Y1), epochs=1)
        make = {"sgd": lambda p, **k: torch.optim.SGD(p, momentum=0.9, **k),
                "adam": torch.optim.Adam}[name]
        opt = make(ref.parameters(), lr=0.1, weight_decay=decay or 0.0)
        for i in range(0, 21, 8):
            value = torch.nn.functional.cross_entropy(ref(torch.tensor(X[i:i + 8])),
                                                      torch.tensor(Y1[i:i + 8]))
            opt.zero_grad()
            value.backward()
            opt.step()
        np.testing.assert_allclose(model.weight.numpy(), ref.weight.detach().numpy(),
                                   atol=1e-12, err_msg=f"{name}, weight_decay={decay}")


def test_weight_decay_beside_the_users_optimizer_is_said():
    """``Trainer(optimizer=make, weight_decay=0.1)``: the optimizer given decays as it was
    built (the setting was dropped without a word); nothing said without the setting."""
    make = lambda params: skiff.optim.SGD(params, lr=0.1)  # noqa: E731
    with pytest.warns(UserWarning, match=r"weight_decay=0.1 is not used: optimizer= is yours"):
        skiff.Trainer(nn.Linear(5, 3), optimizer=make, weight_decay=0.1)
    with pytest.warns(UserWarning, match=r"decay_bias_norm=False is not used"):
        skiff.Trainer(nn.Linear(5, 3), optimizer=make, decay_bias_norm=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skiff.Trainer(nn.Linear(5, 3), optimizer=make)
        skiff.Trainer(nn.Linear(5, 3), optimizer="sgd", weight_decay=0.1)

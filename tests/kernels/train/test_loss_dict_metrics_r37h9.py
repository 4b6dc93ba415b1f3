"""Round 37 (h9): a loss function that returns a dict, ``{"loss": ..., "mae": ...}`` (what a
Lightning ``training_step`` returns and logs with ``self.log``): the Trainer trained on its
``"loss"`` (round 37, h5) but dropped the other values. They are a step's metrics now: in
``result.history`` (the mean over the logging window, as transformers averages
``logging_steps``; a name a row has already, ``lr``, as ``train_lr``) and in the run folder's
events. The oracle: a torch 2.13 loop from the same weights on the same batches, its values
computed by hand. A torch DataLoader whose dataset returns ``{"input": x, "label": y}``
(transformers-style items) trains as the torch loop over it does."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import skiff
from skiff import nn
from skiff.jobs.reporter import RunReporter

LR, BATCH, EPOCHS = 0.05, 8, 2


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype("f4")
    return x, (x @ np.array([1.0, -2.0, 0.5], "f4"))[:, None] + 0.3


def _dict_loss(out, y):
    d = out - y
    return {"loss": (d * d).mean(), "mae": abs(d).mean(), "lr": 7, "outputs": out,
            "flag": True}


def _start():
    skiff.seed(0)
    model = nn.Linear(3, 1)
    return model, {k: np.array(v) for k, v in model.state_dict().items()}


def _torch(start, batches):
    """Per step: (mse, mae) of a torch loop of SGD (momentum 0.9, skiff's sgd) on MSE."""
    lin = torch.nn.Linear(3, 1).double()
    lin.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in start.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=LR, momentum=0.9)
    steps = []
    for _ in range(EPOCHS):
        for x, y in batches():
            d = lin(x.double()) - y.double()
            loss = (d * d).mean()
            steps.append((loss.item(), d.abs().mean().item()))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return np.array(steps)


def _batches():
    x, y = (torch.tensor(a) for a in _data())
    return [(x[i:i + BATCH], y[i:i + BATCH]) for i in range(0, len(x), BATCH)]


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    model, start = _start()
    seen = []  # what a callback gets after each step (Lightning's callback_metrics)
    trainer = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, loss=_dict_loss,
                            schedule="constant", clip=None, shuffle=False, log_every=3,
                            reporter=RunReporter(run_dir),
                            callbacks=[seen.append])
    result = trainer.train(_data(), epochs=EPOCHS)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return result, events, _torch(start, _batches), seen


def _windows(values, every, total):
    """transformers' logging: the mean of the steps since the last row, every ``every``
    steps and at the last one."""
    ends = [s for s in range(1, total + 1) if s % every == 0 or s == total]
    starts = [0] + ends[:-1]
    return ends, [float(np.mean(values[a:b])) for a, b in zip(starts, ends)]


def test_the_other_values_of_a_loss_dict_are_recorded_per_logged_step(logged):
    result, _, ref, _ = logged
    ends, mae = _windows(ref[:, 1], 3, len(ref))
    _, mse = _windows(ref[:, 0], 3, len(ref))
    assert [r["step"] for r in result.history] == ends
    np.testing.assert_allclose([r["mae"] for r in result.history], mae, rtol=1e-5)
    np.testing.assert_allclose(result.losses, mse, rtol=1e-5)
    # a name the row has already is the loss function's under train_; no Tensor of many
    # values, no bool, and the loss itself once
    assert all(r["train_lr"] == 7.0 and r["lr"] == LR for r in result.history)
    assert not any({"outputs", "flag"} & set(r) for r in result.history)


def test_the_values_are_metric_events_of_the_run_folder(logged):
    result, events, _, _ = logged
    got = [e for e in events if e.get("type") == "metric" and e.get("name") == "mae"]
    assert [e["step"] for e in got] == [r["step"] for r in result.history]
    assert [e["value"] for e in got] == pytest.approx([r["mae"] for r in result.history])


def test_a_callback_gets_each_steps_values(logged):
    _, _, ref, seen = logged
    np.testing.assert_allclose([m["mae"] for m in seen], ref[:, 1], rtol=1e-5)
    assert all(m["train_lr"] == 7.0 and m["lr"] == LR for m in seen)


def test_a_loss_of_no_dict_adds_nothing_to_the_history():
    model, _ = _start()
    result = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, loss="mse",
                           schedule="constant", clip=None).train(_data(), epochs=1)
    assert set(result.history[-1]) == {"step", "loss", "lr", "epoch", "samples_per_s"}


class _Items(torch.utils.data.Dataset):
    """transformers-style items: ``{"input": x, "label": y}``."""

    def __init__(self):
        self.x, self.y = (torch.tensor(a) for a in _data())

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input": self.x[i], "label": self.y[i]}


def test_a_torch_loader_of_dict_items_trains_as_a_torch_loop():
    model, start = _start()
    loader = torch.utils.data.DataLoader(_Items(), batch_size=BATCH, shuffle=False)
    result = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=4, loss=_dict_loss,
                           schedule="constant", clip=None).train(loader, epochs=EPOCHS)
    ref = _torch(start, lambda: ((b["input"], b["label"]) for b in loader))
    np.testing.assert_allclose(result.losses, ref[:, 0], rtol=1e-5)
    np.testing.assert_allclose([r["mae"] for r in result.history], ref[:, 1], rtol=1e-5)


def test_a_torch_loader_of_items_of_other_keys_is_refused_naming_the_keys():
    class Pixels(_Items):
        def __getitem__(self, i):
            return {"pixels": self.x[i], "labels": self.y[i]}

    model, _ = _start()
    loader = torch.utils.data.DataLoader(Pixels(), batch_size=BATCH)
    with pytest.raises(TypeError, match=r"a dict batch needs an input key \(x, input, .*\) "
                                        r"and a target key \(y, .*\); got keys "
                                        r"\['labels', 'pixels'\]"):
        skiff.Trainer(model, loss=_dict_loss).train(loader, epochs=1)


def test_a_float64_model_trains_in_float64_as_a_torch_float64_loop():
    """``model.double()`` on float64 arrays: the batches were made float32 (a Tensor of a
    float64 array is the default float), "expected m1 and m2 to have the same dtype"."""
    model, start = _start()
    model = model.double()
    x, y = (a.astype("f8") for a in _data())
    result = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, loss=_dict_loss,
                           schedule="constant", clip=None, shuffle=False).train(
        (x, y), epochs=EPOCHS)
    ref = _torch(start, lambda: ((torch.tensor(x[i:i + BATCH]), torch.tensor(y[i:i + BATCH]))
                                 for i in range(0, len(x), BATCH)))
    np.testing.assert_allclose(result.losses, ref[:, 0], rtol=1e-12)
    np.testing.assert_allclose([r["mae"] for r in result.history], ref[:, 1], rtol=1e-12)
    assert all(p.dtype == np.float64 for p in model.parameters())

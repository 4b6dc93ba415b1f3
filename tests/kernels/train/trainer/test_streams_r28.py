"""train/evaluate/predict on a stream (a generator, an iterator, an IterableDataset: no
length), and gradient accumulation against one big batch; the oracle is torch 2.13.

Found by a user: ``trainer.train(ds)`` with a torch-style ``IterableDataset`` (or a generator,
or a DataLoader over one) was refused ("must be (X, y) arrays or a dataset with a length"),
where torch's ``DataLoader(ds, batch_size=8)`` batches its samples. Now its samples are read
once per call and batched by the Trainer, as torch's loader batches them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.data_stream import read_stream
from skiff.nn import Linear, ReLU, Sequential


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    return x, (x[:, :3].sum(1) > 0).astype(np.int64)


def _models():
    skiff.seed(0)
    model = Sequential(Linear(8, 16), ReLU(), Linear(16, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    with torch.no_grad():
        for t, p in zip(ref.parameters(), model.parameters()):
            t.copy_(torch.tensor(np.asarray(p.numpy(), np.float32)))
    return model, ref


class TorchStream(torch.utils.data.IterableDataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __iter__(self):
        for i in range(len(self.x)):
            yield self.x[i], self.y[i]


def _skiff_stream(x, y):
    class SkiffStream(skiff.utils.data.IterableDataset):
        def __iter__(self):
            for i in range(len(x)):
                yield x[i], y[i]

    return SkiffStream()


def _torch_losses(ref, x, y, *, epochs, batch):
    opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(epochs):
        for xb, yb in torch.utils.data.DataLoader(TorchStream(x, y), batch_size=batch):
            loss = torch.nn.functional.cross_entropy(ref(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


@pytest.mark.parametrize("kind", ["torch", "skiff", "generator", "loader"])
def test_train_on_a_stream_equals_torch_dataloader_over_it(kind):
    x, y = _data()  # 60 samples, batch 16: an uneven last batch of 12
    model, ref = _models()
    want = _torch_losses(ref, x, y, epochs=2, batch=16)
    data = {"torch": lambda: TorchStream(x, y), "skiff": lambda: _skiff_stream(x, y),
            "generator": lambda: ((x[i], y[i]) for i in range(len(x))),
            "loader": lambda: skiff.utils.data.DataLoader(_skiff_stream(x, y), batch_size=16),
            }[kind]()
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, batch_size=16, shuffle=False,
                            schedule="constant", clip=None)
    got = [r["loss"] for r in trainer.train(data, epochs=2).history]
    assert len(got) == len(want) == 8
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for t, p in zip(ref.parameters(), model.parameters()):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), atol=1e-5)


def test_evaluate_and_predict_on_a_stream_with_an_uneven_last_batch():
    x, y = _data(45)
    model, ref = _models()
    trainer = skiff.Trainer(model, batch_size=16)
    got = trainer.evaluate(TorchStream(x, y))
    with torch.no_grad():
        out = ref(torch.tensor(x))
        want = torch.nn.functional.cross_entropy(out, torch.tensor(y)).item()
    assert got["val_loss"] == pytest.approx(want, rel=1e-5)
    assert got["val_accuracy"] == pytest.approx(float((out.argmax(1).numpy() == y).mean()))
    pred = trainer.predict(iter(x))
    np.testing.assert_allclose(pred, out.numpy(), atol=1e-5)


def test_a_used_up_generator_and_an_endless_one_say_what_to_do():
    x, y = _data()
    gen = ((x[i], y[i]) for i in range(len(x)))
    trainer = skiff.Trainer(_models()[0], batch_size=16)
    trainer.train(gen, epochs=1)
    with pytest.raises(ValueError, match="used up.*make a new one"):
        trainer.train(gen, epochs=1)

    def endless():
        while True:
            yield x[0], y[0]

    with pytest.raises(ValueError, match=r"more than 100 samples.*islice"):
        read_stream(endless(), limit=100)


def test_gradient_accumulation_equals_one_big_batch_in_torch():
    """grad_accum=4 micro-batches of 4 against torch's batch of 16 (float32, SGD)."""
    x, y = _data(64)
    model, ref = _models()
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, batch_size=4, grad_accum=4,
                            shuffle=False, schedule="constant", clip=None)
    got = [r["loss"] for r in trainer.train((x, y), steps=4).history]
    want = _torch_losses(ref, x, y, epochs=1, batch=16)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for t, p in zip(ref.parameters(), model.parameters()):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), atol=1e-5)


def test_a_generator_of_batches_is_told_apart_from_one_of_samples():
    """Keras-style (Xb, yb) batches are taken as samples (torch's rule) with a warning that
    says how to pass batches; samples, and token sequences (T,) with targets (T,), give none."""
    import warnings

    x, y = _data(32)
    with pytest.warns(UserWarning, match="like \\(X, y\\) batches"):
        read_stream((x[i:i + 8], y[i:i + 8]) for i in range(0, 32, 8))
    ids = np.arange(40).reshape(4, 10) % 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_stream((x[i], y[i]) for i in range(32))
        read_stream((ids[i, :-1], ids[i, 1:]) for i in range(4))

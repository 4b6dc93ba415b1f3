"""Round 30: what a torch user hands the Trainer out of habit. A torch loss module failed
inside torch ("argument 'input' must be Tensor, not Tensor"), a factory of a torch optimizer
with "optimizer can only optimize Tensors", a torch DataLoader of a TensorDataset with
"setting an array element with a sequence". The first two now name skiff's class of the same
name; the loader trains on its dataset with its batch size. Oracle: torch 2.13 running the
same loop (the same DataLoader, AdamW, weighted cross-entropy)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype("f4")
    return x, (x[:, 0] + 0.5 * x[:, 1] > 0.2).astype("i8")


def _model():
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))
    return model, {k: np.array(v, copy=True) for k, v in model.state_dict().items()}


def _torch_losses(start, batches, crit, make_opt):
    twin = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin.load_state_dict({k: torch.tensor(v) for k, v in start.items()})
    opt = make_opt(twin.parameters())
    out = []
    for xb, yb in batches:
        loss = crit(twin(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


def test_a_torch_dataloader_trains_on_its_dataset_and_batch_size():
    x, y = _data()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=8)
    model, start = _model()
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.05, schedule="constant", clip=None,
                            shuffle=False)
    result = trainer.train(loader, epochs=2)
    want = _torch_losses(start, [b for _ in range(2) for b in loader],
                         torch.nn.CrossEntropyLoss(),
                         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9))
    np.testing.assert_allclose(result.losses, want, rtol=1e-5, atol=1e-6)
    assert trainer.batch_size == 32  # the loader's batch size was for that call only
    # evaluate and predict take the loader too (they failed as train did)
    twin = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    with torch.no_grad():
        out = twin(torch.tensor(x))
        val = np.mean([torch.nn.functional.cross_entropy(twin(xb), yb).item()
                       for xb, yb in loader])  # batches of 8: equal rows
    got = trainer.evaluate(loader)
    np.testing.assert_allclose(got["val_loss"], val, rtol=1e-5)
    assert got["val_accuracy"] == float((out.argmax(-1).numpy() == y).mean())
    np.testing.assert_allclose(trainer.predict(loader), out.numpy(), atol=1e-5)


def test_a_torch_loader_with_its_own_sampler_is_refused():
    x, y = _data()
    ds = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    loader = torch.utils.data.DataLoader(
        ds, batch_size=8, sampler=list(range(20))[::-1])  # (a SubsetRandomSampler is
    # followed since round 45 h5: test_torch_port_r45h5.py)
    with pytest.raises(TypeError, match="own sampler"):
        skiff.Trainer(_model()[0]).train(loader, epochs=1)


def test_a_torch_loss_is_refused_naming_skiffs_and_skiffs_equals_torchs():
    weight = np.array([1.0, 2.5], np.float32)
    with pytest.raises(TypeError, match=r"skiff\.nn\.CrossEntropyLoss\(\.\.\.\) with the same"):
        skiff.Trainer(_model()[0], loss=torch.nn.CrossEntropyLoss(weight=torch.tensor(weight)))
    x, y = _data()
    model, start = _model()
    result = skiff.Trainer(model, loss=nn.CrossEntropyLoss(weight=weight), optimizer="sgd",
                           lr=0.05, schedule="constant", clip=None, batch_size=8,
                           shuffle=False).train((x, y), epochs=1)
    batches = [(torch.tensor(x[i:i + 8]), torch.tensor(y[i:i + 8])) for i in range(0, 40, 8)]
    want = _torch_losses(start, batches, torch.nn.CrossEntropyLoss(weight=torch.tensor(weight)),
                         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9))
    np.testing.assert_allclose(result.losses, want, rtol=1e-5, atol=1e-6)


def test_a_torch_optimizer_factory_is_refused_naming_skiffs_and_skiffs_equals_torchs():
    x, y = _data()
    trainer = skiff.Trainer(_model()[0], optimizer=lambda p: torch.optim.AdamW(p, lr=1e-2))
    with pytest.raises(TypeError, match=r"use skiff\.optim\.AdamW \(the same arguments\)"):
        trainer.train((x, y), epochs=1)
    model, start = _model()
    result = skiff.Trainer(model, optimizer=lambda p: skiff.optim.AdamW(p, lr=1e-2),
                           schedule="constant", clip=None, batch_size=8,
                           shuffle=False).train((x, y), epochs=1)
    batches = [(torch.tensor(x[i:i + 8]), torch.tensor(y[i:i + 8])) for i in range(0, 40, 8)]
    want = _torch_losses(start, batches, torch.nn.CrossEntropyLoss(),
                         lambda p: torch.optim.AdamW(p, lr=1e-2))
    np.testing.assert_allclose(result.losses, want, rtol=1e-5, atol=1e-6)

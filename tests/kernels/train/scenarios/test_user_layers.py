"""Layers and losses a torch user reaches for, checked against torch; binary classification,
class ids as a column, validation when training stops mid-epoch."""

import numpy as np
import pytest

import skiff
from skiff import nn
from skiff.kernels.train.core import random as train_random

torch = pytest.importorskip("torch")


def _grads(loss_ours, params_ours, loss_ref, params_ref):
    loss_ours.backward()
    loss_ref.backward()
    for p, q in zip(params_ours, params_ref, strict=True):
        np.testing.assert_allclose(p.grad, q.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_activation_and_norm_layers_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    for ours, ref in [(nn.Sigmoid(), torch.nn.Sigmoid()), (nn.Softmax(), torch.nn.Softmax(-1)),
                      (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2))]:
        xs, xt = skiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        w = rng.standard_normal(x.shape).astype(np.float32)
        np.testing.assert_allclose(ours(xs).numpy(), ref(xt).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        _grads((ours(xs) * skiff.tensor(w)).sum(), [xs], (ref(xt) * torch.tensor(w)).sum(), [xt])

    bn, bt = nn.BatchNorm1d(5), torch.nn.BatchNorm1d(5)
    for _ in range(3):  # running statistics follow torch's
        xs, xt = skiff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        _grads((bn(xs) ** 2).sum(), [xs, bn.weight], (bt(xt) ** 2).sum(), [xt, bt.weight])
        x = x * 1.5 + 0.3
    np.testing.assert_allclose(bn.running_mean.numpy(), bt.running_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), bt.running_var.numpy(), rtol=1e-5)
    bn.eval()
    bt.eval()
    np.testing.assert_allclose(bn(x).numpy(), bt(torch.tensor(x)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"BatchNorm1d\(5\) expects \(N, 5\).*got \(2, 3\)"):
        bn(np.zeros((2, 3), np.float32))


def test_bce_with_logits_matches_torch_and_trains_a_binary_classifier():
    rng = np.random.default_rng(1)
    z = (4 * rng.standard_normal((7, 1))).astype(np.float32)
    t = rng.integers(0, 2, (7, 1)).astype(np.float32)
    ours = nn.BCEWithLogitsLoss()(skiff.tensor(z), skiff.tensor(t)).item()
    ref = torch.nn.BCEWithLogitsLoss()(torch.tensor(z), torch.tensor(t)).item()
    assert ours == pytest.approx(ref, rel=1e-5)

    x = rng.standard_normal((300, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -1.0, 0.5]) > 0).astype(np.float32)  # (N,) labels, 1 output
    train_random.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), loss="bce", lr=0.05, batch_size=32)
    result = trainer.train((x, y), epochs=10, val_dataset=(x, y))
    acc = float(((trainer.predict(x)[:, 0] > 0) == (y > 0.5)).mean())
    assert result.val_history[-1]["val_accuracy"] == pytest.approx(acc)
    assert acc > 0.95


def test_class_id_column_validation_mid_epoch_and_adam():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((200, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.int64)  # a column, as sklearn-style code often has it
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    trainer = skiff.Trainer(model, optimizer="adam", lr=0.02, batch_size=20)
    result = trainer.train((x, y), steps=5, val_dataset=(x, y))  # half an epoch
    (val,) = result.val_history
    assert val["step"] == 5 and val["epoch"] == pytest.approx(0.5)
    acc = float((trainer.predict(x).argmax(1) == y[:, 0]).mean())
    assert val["val_accuracy"] == pytest.approx(acc)
    assert trainer.optimizer.param_groups[0]["weight_decay"] == 0.0


@pytest.mark.parametrize("own_optimizer", [False, True])
def test_training_twice_continues_like_one_longer_run_with_a_constant_lr(own_optimizer):
    """``train`` twice = one run of twice the steps (constant lr, no shuffle): the optimizer's
    moments carry over; and with a schedule the second call starts again from the peak lr."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x @ np.array([1.0, 2.0, -1.0], dtype=np.float32)

    def run(calls, steps):
        train_random.seed(0)
        model = nn.Linear(3, 1)
        opt = skiff.optim.AdamW(model.parameters(), lr=0.05) if own_optimizer else None
        trainer = skiff.Trainer(model, optimizer=opt, lr=0.05, batch_size=64,
                                schedule="constant", shuffle=False)
        for _ in range(calls):
            trainer.train((x, y), steps=steps)
        return model.weight.numpy()

    np.testing.assert_allclose(run(2, 5), run(1, 10), rtol=1e-5, atol=1e-6)

    model = nn.Linear(3, 1)
    opt = skiff.optim.SGD(model.parameters(), lr=0.1) if own_optimizer else None
    trainer = skiff.Trainer(model, optimizer=opt, lr=0.1, warmup_steps=0, batch_size=16)
    first = trainer.train((x, y), steps=4)
    second = trainer.train((x, y), steps=4)
    assert first.history[0]["lr"] == pytest.approx(0.1)
    assert second.history[0]["lr"] == pytest.approx(0.1)  # not the decayed 0.01

"""fp16-mixed computes its loss in float32, as ``torch.autocast`` runs cross_entropy and
mse_loss, so the first loss scale (2^16, torch.amp.GradScaler's) does not overflow.

Found by a user: every fp16-mixed run skipped its first step whatever the data (the loss was
computed in float16 and cast to float32 after, so the backward seeded 2^16 into float16: inf),
and a regression's float32 targets were rounded to float16 for the MSE. The oracle is torch on
the CPU: the same MLP with float16 weights and activations (autocast's fp16 policy: linear
layers in float16, the loss in float32 from the float16 logits), float32 masters, SGD with
momentum 0.9 and GradScaler's rules (skip a step whose unscaled gradients hold an inf/nan and
halve the scale; double it after ``growth_interval`` good steps).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core.nn.module import Module
from skiff.kernels.train.precision import MixedTraining
from skiff.nn import Linear, ReLU, Sequential


def _data(huge: bool, n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = (x.sum(1) > 0).astype(np.int64)
    if huge:  # one sample whose gradients overflow float16 at the first scales
        x[5] *= 300.0
    return x, y


def _mlp():
    skiff.seed(0)
    return Sequential(Linear(8, 32), ReLU(), Linear(32, 2))


def _torch_fp16(weights, x, y, steps, *, batch=16, lr=0.05, loss="ce", growth=2000,
                starts=None):
    """torch's fp16 autocast + GradScaler on the MLP: losses, skipped steps, final masters
    (``starts``: the first row of each step's batch, in order by default)."""
    masters = [torch.tensor(w, requires_grad=True) for w in weights]
    opt = torch.optim.SGD(masters, lr=lr, momentum=0.9)
    scale, good, losses, skipped = 2.0 ** 16, 0, [], []
    for s in range(steps):
        i = (s * batch) % len(x) if starts is None else starts[s]
        xb, yb = torch.tensor(x[i:i + batch]), torch.tensor(y[i:i + batch])
        w1, b1, w2, b2 = (m.detach().half().requires_grad_() for m in masters)
        out = torch.relu(xb.half() @ w1.T + b1) @ w2.T + b2
        if loss == "ce":
            value = torch.nn.functional.cross_entropy(out.float(), yb)
        else:
            value = torch.nn.functional.mse_loss(out.float(), yb)
        losses.append(value.item())
        (value * scale).backward()
        grads = [t.grad.float() / scale for t in (w1, b1, w2, b2)]
        if all(torch.isfinite(g).all() for g in grads):
            for m, g in zip(masters, grads):
                m.grad = g
            opt.step()
            good += 1
            if good == growth:
                scale, good = scale * 2, 0
        else:
            skipped.append(s + 1)
            scale, good = scale / 2, 0
    return losses, skipped, [m.detach().numpy() for m in masters], scale


def _skiff_fp16(model, x, y, steps, **kw):
    """The Trainer in fp16-mixed: losses, the steps it skipped, masters, the final scale."""
    skipped = []
    trainer = skiff.Trainer(model, precision="fp16-mixed", optimizer="sgd", lr=0.05,
                            batch_size=16, schedule="constant", shuffle=False, clip=None, **kw)
    step = MixedTraining.step

    def counting(self, *args, **kwargs):
        ran, norm = step(self, *args, **kwargs)
        if not ran:
            skipped.append(len(counting.calls) + 1)
        counting.calls.append(ran)
        return ran, norm

    counting.calls = []
    MixedTraining.step = counting
    try:
        result = trainer.train((x, y), steps=steps)
    finally:
        MixedTraining.step = step
    masters = [m.numpy().copy() for m in trainer.mixed.master_params()]
    return [r["loss"] for r in result.history], skipped, masters, trainer.mixed


@pytest.mark.parametrize("huge", [False, True])
def test_fp16_skips_the_steps_torch_gradscaler_skips(huge):
    x, y = _data(huge)
    weights = [p.numpy().copy() for p in _mlp().parameters()]
    ref_losses, ref_skipped, ref_masters, ref_scale = _torch_fp16(weights, x, y, 8)
    assert (ref_skipped == [1, 5]) if huge else not ref_skipped  # the data do what we say
    losses, skipped, masters, mixed = _skiff_fp16(_mlp(), x, y, 8)
    assert skipped == ref_skipped
    assert mixed.loss_scale == ref_scale
    np.testing.assert_allclose(losses, ref_losses, rtol=2e-3)
    for m, r in zip(masters, ref_masters):
        assert np.abs(m - r).max() <= 1e-3 * max(np.abs(r).max(), 1.0)


def test_fp16_scale_grows_after_growth_interval_good_steps():
    """growth_interval 3: the scale doubles after every 3 finite steps (torch's rule)."""
    x, y = _data(False)
    weights = [p.numpy().copy() for p in _mlp().parameters()]
    # the second train() starts the data again: batches 0 | 0, 16, 32, 48, 0, 16
    ref = _torch_fp16(weights, x, y, 7, growth=3, starts=[0, 0, 16, 32, 48, 0, 16])
    model = _mlp()
    trainer = skiff.Trainer(model, precision="fp16-mixed", optimizer="sgd", lr=0.05,
                            batch_size=16, schedule="constant", shuffle=False, clip=None)
    trainer.train((x, y), steps=1)  # the scaler exists; growth every 3 good steps from here
    trainer.mixed.scaler.growth_interval = 3
    rest = trainer.train((x, y), steps=6)
    assert trainer.mixed.skipped == len(ref[1]) == 0
    assert trainer.mixed.loss_scale == ref[3] == 2.0 ** 18
    np.testing.assert_allclose([r["loss"] for r in rest.history], ref[0][1:], rtol=2e-3)


class _OwnLoss(Module):
    """A model with its own ``loss(batch)`` that calls ``self.forward`` (as GPT's does)."""

    def __init__(self):
        super().__init__()
        self.net = _mlp()

    def forward(self, x):
        return self.net(x)

    def loss(self, batch):
        x, y = batch
        return skiff.nn.functional.cross_entropy(self.forward(x), y)


class _PackedLoss(_OwnLoss):
    """Its loss calls ``self.forward_packed`` (as GPT's and ERNIE's do for packed sequences:
    a packed GPT in fp16-mixed skipped its first step)."""

    def forward_packed(self, x):
        return self.net(x)

    def loss(self, batch):
        x, y = batch
        return skiff.nn.functional.cross_entropy(self.forward_packed(x), y)


@pytest.mark.parametrize("make", [_OwnLoss, _PackedLoss])
def test_model_loss_runs_in_float32_too(make):
    """A model's own loss(batch) gets float32 logits: its first step at 2^16 runs, as torch's."""
    x, y = _data(False)
    weights = [p.numpy().copy() for p in _mlp().parameters()]
    ref_losses, ref_skipped, ref_masters, _ = _torch_fp16(weights, x, y, 4)
    losses, skipped, masters, _ = _skiff_fp16(make(), x, y, 4)
    assert skipped == ref_skipped == []
    np.testing.assert_allclose(losses, ref_losses, rtol=2e-3)
    for m, r in zip(masters, ref_masters):
        assert np.abs(m - r).max() <= 1e-3 * max(np.abs(r).max(), 1.0)


@pytest.mark.parametrize("precision, half", [("fp16-mixed", "float16"),
                                             ("bf16-mixed", "bfloat16")])
def test_regression_targets_stay_float32_in_training_and_validation(precision, half):
    """The MSE against float32 targets near 300 (float16's step there is 0.25, bfloat16's 2):
    the oracle is float64 on the exact targets; rounded targets are told apart; validation in
    mixed precision with float targets works and gives the same figure."""
    from skiff.kernels.train.core.tensor import _as_dtype

    model = Sequential(Linear(4, 1))
    model[0].weight._data[...] = 0.0
    model[0].bias._data[...] = 300.0
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (300.0 + 0.1 * rng.standard_normal((64, 1))).astype(np.float32)
    want = float(((300.0 - y.astype(np.float64)) ** 2).mean())
    rounded = float(((300.0 - y.astype(_as_dtype(half)).astype(np.float64)) ** 2).mean())
    assert abs(rounded - want) > 0.05 * want
    trainer = skiff.Trainer(model, precision=precision, batch_size=64, shuffle=False,
                            schedule="constant", clip=None, lr=1e-9)
    val = trainer.evaluate((x, y))["val_loss"]
    assert abs(val - want) < 1e-3 * want, (val, want, rounded)
    result = trainer.train((x, y), steps=1)
    got = result.history[0]["loss"]
    assert abs(got - want) < 1e-3 * want, (got, want, rounded)
    assert trainer.mixed.skipped == 0


@pytest.mark.parametrize("precision", ["fp16-mixed", "bf16-mixed"])
def test_accumulation_clipping_adamw_equal_torch_amp(precision):
    """grad_accum=2, clip 0.5, AdamW: fp16 against the real ``torch.amp.GradScaler("cpu")``
    (unscale_, clip_grad_norm_, step, update) with fp16 casts of the float32 masters, bf16
    against the real ``torch.autocast("cpu", bfloat16)``; the steps skipped and the scale."""
    acc, clip, lr, wd, steps = 2, 0.5, 1e-2, 0.01, 10
    x, y = _data(precision == "fp16-mixed")
    model = _mlp()
    weights = [p.numpy().copy() for p in model.parameters()]
    trainer = skiff.Trainer(model, precision=precision, lr=lr, weight_decay=wd, batch_size=16,
                            grad_accum=acc, schedule="constant", shuffle=False, clip=clip)
    got = [r["loss"] for r in trainer.train((x, y), steps=steps).history]

    masters = [torch.tensor(w, requires_grad=True) for w in weights]
    opt = torch.optim.AdamW(masters, lr=lr, weight_decay=wd)
    scaler = torch.amp.GradScaler("cpu", enabled=precision == "fp16-mixed")
    want, k, skipped = [], 0, 0
    for _ in range(steps):
        total = 0.0
        for _ in range(acc):
            i = (k * 16) % len(x)
            k += 1
            xb, yb = torch.tensor(x[i:i + 16]), torch.tensor(y[i:i + 16])
            if precision == "fp16-mixed":
                w1, b1, w2, b2 = (m.half() for m in masters)
                out = torch.relu(xb.half() @ w1.T + b1) @ w2.T + b2
            else:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    lin = torch.nn.functional.linear
                    out = lin(torch.relu(lin(xb, masters[0], masters[1])), masters[2],
                              masters[3])
            loss = torch.nn.functional.cross_entropy(out.float(), yb) / acc
            total += loss.item()
            scaler.scale(loss).backward()
        want.append(total)
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(masters, clip)
        before = scaler.get_scale() if scaler.is_enabled() else 1.0
        scaler.step(opt)
        scaler.update()
        skipped += scaler.is_enabled() and scaler.get_scale() < before
        opt.zero_grad()
    assert trainer.mixed.skipped == skipped
    assert (skipped >= 2) if precision == "fp16-mixed" else not skipped  # the huge sample
    if scaler.is_enabled():
        assert trainer.mixed.loss_scale == scaler.get_scale()
    np.testing.assert_allclose(got, want, rtol=2e-3 if precision == "fp16-mixed" else 5e-3)


def _torch_outputs(precision, masters, x):
    """torch's outputs of the MLP with these float32 masters: fp16 casts, or bf16 autocast."""
    w = [torch.tensor(m) for m in masters]
    if precision == "fp16-mixed":
        h = [a.half() for a in w]
        return (torch.relu(torch.tensor(x).half() @ h[0].T + h[1]) @ h[2].T + h[3]).float()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lin = torch.nn.functional.linear
        return lin(torch.relu(lin(torch.tensor(x), w[0], w[1])), w[2], w[3]).float()


@pytest.mark.parametrize("precision", ["fp16-mixed", "bf16-mixed"])
def test_evaluate_reports_accuracy_and_r2_in_mixed_precision(precision):
    """evaluate() gave only val_loss in mixed precision (no val_accuracy, no val_r2: the
    flag that keeps the outputs was set on the float32 wrapper only); against torch's
    outputs from the same masters: the loss, the accuracy and the R^2."""
    x, y = _data(False)
    trainer = skiff.Trainer(_mlp(), precision=precision, batch_size=16, lr=1e-2)
    trainer.train((x, y), steps=4)
    got = trainer.evaluate((x, y))
    out = _torch_outputs(precision, [m.numpy() for m in trainer.mixed.master_params()], x)
    want = torch.nn.functional.cross_entropy(out, torch.tensor(y)).item()
    margin = (out[:, 1] - out[:, 0]).abs().numpy()
    sure = margin > 0.02  # rows whose class 16-bit rounding cannot flip
    acc = (out.argmax(1).numpy() == y)
    assert abs(got["val_loss"] - want) < 5e-3 * want
    assert "val_accuracy" in got
    assert abs(got["val_accuracy"] - acc.mean()) <= (~sure).mean() + 1e-9

    skiff.seed(1)
    reg = Sequential(Linear(8, 16), ReLU(), Linear(16, 1))
    t = np.tanh(x @ np.linspace(-1, 1, 8, dtype=np.float32))[:, None]
    trainer = skiff.Trainer(reg, precision=precision, batch_size=16, lr=1e-2)
    trainer.train((x, t), steps=20)
    got = trainer.evaluate((x, t))
    pred = _torch_outputs(precision, [m.numpy() for m in trainer.mixed.master_params()], x)
    pred = pred.numpy().astype(np.float64)
    r2 = 1 - ((pred - t) ** 2).sum() / ((t - t.mean()) ** 2).sum()
    assert "val_r2" in got
    assert abs(got["val_r2"] - r2) < 1e-2, (got, r2)

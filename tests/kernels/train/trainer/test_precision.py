"""Mixed precision in the Trainer: bf16/fp16 weights and activations, float32 masters, loss
scaling for fp16; gradients against PyTorch autocast, overflow skipped, exact resume."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.precision import MixedTraining, check_precision
from skiff.nn import Linear, ReLU, Sequential


def _data(n=256, d=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x, (x.sum(1) > 0).astype(np.int64)


def _model(seed=0):
    skiff.seed(seed)
    return Sequential(Linear(8, 32), ReLU(), Linear(32, 2))


def test_bf16_gradients_equal_torch_autocast():
    """One batch: skiff's bf16-mixed master gradients against torch.autocast(bfloat16)."""
    x, y = _data(64)
    model = _model()
    weights = [p.numpy().astype(np.float32).copy() for p in model.parameters()]
    mixed = MixedTraining(list(model.parameters()), "bf16-mixed")
    xs = skiff.tensor(x.astype(mixed.dtype))
    loss = skiff.nn.functional.cross_entropy(model(xs).astype(np.float32), skiff.tensor(y))
    loss.backward()
    grads = [p._grad.astype(np.float32) for p in model.parameters()]

    w1, b1, w2, b2 = (torch.tensor(w, requires_grad=True) for w in weights)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = torch.relu(torch.tensor(x) @ w1.T + b1) if w1.shape[0] == 32 else \
            torch.relu(torch.tensor(x) @ w1 + b1)
        out = h @ w2.T + b2 if w2.shape[0] == 2 else h @ w2 + b2
    ref = torch.nn.functional.cross_entropy(out.float(), torch.tensor(y))
    ref.backward()
    assert abs(loss.item() - ref.item()) < 2e-2 * abs(ref.item())
    for g, t in zip(grads, (w1, b1, w2, b2)):
        tg = t.grad.numpy()
        assert np.linalg.norm(g - tg) <= 5e-2 * np.linalg.norm(tg), (g.shape, tg.shape)


@pytest.mark.parametrize("precision", ["bf16-mixed", "fp16-mixed"])
def test_trains_like_float32(precision):
    x, y = _data()
    runs = {}
    for prec in ("32", precision):
        trainer = skiff.Trainer(_model(), precision=prec, lr=1e-2, batch_size=32)
        runs[prec] = (trainer, trainer.train((x, y), epochs=3))
    t16, r16 = runs[precision]
    _, r32 = runs["32"]
    dtype = {"bf16-mixed": "bfloat16", "fp16-mixed": "float16"}[precision]
    assert all(p.dtype.name == dtype for p in t16.model.parameters())
    assert all(m.dtype == np.float32 for m in t16.mixed.master_params())
    assert abs(r16.final_loss - r32.final_loss) < 0.05 * r32.final_loss
    assert r16.final_loss < 0.6 * r16.history[0]["loss"]


def test_fp16_overflow_skips_the_step_and_halves_the_scale():
    x, y = _data()
    trainer = skiff.Trainer(_model(), precision="fp16-mixed", lr=1e-2, batch_size=32)
    trainer.train((x, y), steps=1)  # the optimizer and the masters exist
    mixed = trainer.mixed
    mixed.scaler.scale_value = 2.0 ** 40  # any loss times this overflows float16
    before = [m.numpy().copy() for m in mixed.master_params()]
    trainer.train((x, y), steps=1)
    assert mixed.skipped == 1  # the first step, at 2**16 (torch's first scale), ran
    assert mixed.loss_scale == 2.0 ** 39
    assert all(np.array_equal(b, m.numpy()) for b, m in zip(before, mixed.master_params()))


def test_resume_continues_exactly_with_masters_and_scaler(tmp_path):
    x, y = _data()

    def run(steps, resume=False, folder=tmp_path / "a"):
        t = skiff.Trainer(_model(), precision="fp16-mixed", lr=1e-2, batch_size=32,
                          schedule="constant", checkpoint_dir=folder, checkpoint_every=3,
                          resume=resume)
        t.train((x, y), steps=steps)
        return t

    whole = run(8, folder=tmp_path / "whole")
    run(5)  # writes a checkpoint at step 3 (and at the end, 5)
    again = run(8, resume=True)
    for a, b in zip(whole.mixed.master_params(), again.mixed.master_params()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert whole.mixed.loss_scale == again.mixed.loss_scale


def test_bad_precision_and_unsupported_strategy():
    assert check_precision("bf16") == "bf16-mixed" and check_precision(32) == "32"
    with pytest.raises(ValueError, match="choose from 32, bf16-mixed, fp16-mixed"):
        skiff.Trainer(_model(), precision="fp8")
    x, y = _data()
    from skiff.kernels.train.parallel.data_parallel import DataParallel

    with pytest.raises(ValueError, match="does not run with 'dp' yet"):
        skiff.Trainer(_model(), precision="bf16-mixed",
                      strategy=DataParallel(compression="fp16")).train((x, y), steps=1)


def test_planner_costs_the_chosen_precision():
    """16-bit weights and activations, float32 gradients (as skiff reduces and steps them)
    and AdamW moments plus a float32 master in the optimizer state."""
    x, y = _data(64)
    memory = {}
    for prec in ("32", "bf16-mixed"):
        trainer = skiff.Trainer(_model(), precision=prec, strategy="dp", batch_size=16)
        trainer.train((x, y), steps=1)
        memory[prec] = trainer.plan["estimate"]["memory"]
    n = sum(p.size for p in _model().parameters())
    assert memory["32"]["params"] == 4 * n and memory["bf16-mixed"]["params"] == 2 * n
    assert memory["32"]["grads"] == memory["bf16-mixed"]["grads"] == 4 * n
    assert memory["32"]["optimizer"] == 8 * n and memory["bf16-mixed"]["optimizer"] == 12 * n
    assert memory["bf16-mixed"]["activations"] < 0.55 * memory["32"]["activations"]


def test_float32_checkpoint_resumed_in_mixed_precision_keeps_its_float32_weights(tmp_path):
    """The masters take the checkpoint's float32 weights, not their bfloat16 rounding."""
    x, y = _data()
    first = skiff.Trainer(_model(), lr=1e-2, batch_size=32, checkpoint_dir=tmp_path)
    first.train((x, y), steps=2)
    weights = [p.numpy().copy() for p in first.model.parameters()]
    again = skiff.Trainer(_model(seed=1), precision="bf16-mixed", lr=1e-2, batch_size=32,
                          checkpoint_dir=tmp_path, resume=True)
    again.train((x, y), steps=2)  # nothing left to train: the resumed state itself
    for w, m in zip(weights, again.mixed.master_params()):
        np.testing.assert_array_equal(m.numpy(), w)

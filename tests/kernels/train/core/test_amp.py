"""Mixed precision: loss-scaling logic against torch's GradScaler; float16 storage with
float32 master weights on CPU float16 numpy arrays."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from skiff.kernels.train.core import amp, nn, optim
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.random import seed
from skiff.kernels.train.core.tensor import Tensor


def test_scale_schedule_matches_torch_gradscaler():
    bad_steps = {1, 4, 5}
    ours = amp.GradScaler(init_scale=1024.0, growth_interval=2)
    theirs = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    p = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    tp = torch.nn.Parameter(torch.ones(3))
    opt = optim.SGD([p], lr=0.1)
    topt = torch.optim.SGD([tp], lr=0.1)
    for step in range(9):
        g = np.full(3, 0.5, dtype=np.float32)
        if step in bad_steps:
            g[1] = np.inf
        opt.zero_grad()
        topt.zero_grad()
        ours.scale((p * Tensor(g)).sum()).backward()  # d loss / d p = g, times the scale
        theirs.scale((tp * torch.from_numpy(g)).sum()).backward()
        ran = ours.step(opt)
        theirs.step(topt)
        ours.update()
        theirs.update()
        assert ran == (step not in bad_steps)
        assert ours.get_scale() == theirs.get_scale(), step
        np.testing.assert_allclose(p.data, tp.detach().numpy(), rtol=1e-6)


def test_loss_scaling_rescues_float16_underflow():
    w = Tensor(np.ones(4, dtype=np.float16), requires_grad=True)
    # d loss / d w = 1e-8: below float16's smallest subnormal (6e-8), so it flushes to zero
    (w * 1e-4).sum().astype(np.float32).__mul__(1e-4).backward()
    assert np.all(w.grad == 0)
    w.grad = None
    scaler = amp.GradScaler(init_scale=2.0**16)
    loss = (w * 1e-4).sum().astype(np.float32) * 1e-4
    scaler.scale(loss).backward()
    assert w.grad.dtype == np.float16 and np.all(w.grad != 0)
    master = Tensor(w.grad.astype(np.float32), requires_grad=False)
    np.testing.assert_allclose(master.numpy() / scaler.get_scale(), 1e-8, rtol=2e-3)


def _mlp():
    seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 3))


@pytest.mark.parametrize("dtype", ["float16", pytest.param(
    "bfloat16", marks=pytest.mark.skipif(importlib.util.find_spec("ml_dtypes") is None,
                                         reason="ml_dtypes missing"))])
def test_mixed_precision_training_with_master_weights(dtype):
    model = _mlp()
    ref = _mlp()  # float32 twin trained the same way
    mp = amp.MixedPrecision(model, dtype=dtype, scaler=amp.GradScaler(
        init_scale=2.0**8, enabled=dtype == "float16"))
    assert all(str(p.dtype) == dtype for p in model.parameters())
    assert all(m.dtype == np.float32 for m in mp.master_params())
    opt = optim.AdamW(mp.master_params(), lr=1e-2)
    ropt = optim.AdamW(ref.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    data = rng.standard_normal((32, 6))
    labels = (data @ rng.standard_normal((6, 3))).argmax(1)
    losses, rlosses = [], []
    for i in range(30):
        x, y = data[(i * 8) % 32 : (i * 8) % 32 + 8], labels[(i * 8) % 32 : (i * 8) % 32 + 8]
        loss = F.cross_entropy(model(Tensor(x, dtype=dtype)), y)
        mp.backward(loss)
        assert mp.step(opt, clip=1.0)
        losses.append(float(loss.astype(np.float32).item()))
        rl = F.cross_entropy(ref(Tensor(x)), y)
        ropt.zero_grad()
        rl.backward()
        optim.clip_grad_norm_(ref.parameters(), 1.0)
        ropt.step()
        rlosses.append(rl.item())
    # the model holds the rounded masters, and training tracks the float32 run
    for p, m in zip(model.parameters(), mp.master_params()):
        np.testing.assert_array_equal(p.data, m.data.astype(p.dtype))
    assert np.mean(losses[-5:]) < np.mean(losses[:5])
    tol = 0.05 if dtype == "float16" else 0.15
    np.testing.assert_allclose(losses, rlosses, rtol=tol, atol=tol)


def test_mixed_precision_skips_a_nonfinite_step_and_backs_off():
    model = _mlp()
    mp = amp.MixedPrecision(model, dtype="float16", scaler=amp.GradScaler(init_scale=256.0))
    opt = optim.SGD(mp.master_params(), lr=0.1)
    before = [m._data.copy() for m in mp.master_params()]
    x = Tensor(np.full((2, 6), 1e4), dtype="float16")  # activations overflow float16
    with np.errstate(over="ignore", invalid="ignore"):
        loss = F.cross_entropy(model(x) * 1e3, np.array([0, 1]))
    mp.backward(loss)
    assert not mp.step(opt)
    assert mp.scaler.get_scale() == 128.0 and mp.scaler.skipped_steps == 1
    for b, m in zip(before, mp.master_params()):
        np.testing.assert_array_equal(b, m.data)
    with pytest.raises(ValueError, match="float16"):
        amp.MixedPrecision(model, dtype="int8")

"""Optimizers, clipping and schedules against torch.optim."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skiff.kernels.backend import numba_available
from skiff.kernels.backend.testing import check_op
from skiff.kernels.train.core import nn, optim
from skiff.kernels.train.core.nn import functional as F
from skiff.kernels.train.core.random import seed
from skiff.kernels.train.core.tensor import Tensor


def _mlp_pair(dtype):
    seed(0)
    ours = nn.Sequential(nn.Linear(6, 16), nn.GELU("tanh"), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 4)).to(dtype)
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(approximate="tanh"),
                                 torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                 torch.nn.Linear(16, 4)).to(getattr(torch, dtype))
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    return ours, theirs


def _train(ours, theirs, make_opts, steps, dtype, clip=None):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((64, 6))
    labels = (data @ rng.standard_normal((6, 4))).argmax(axis=1)  # a learnable teacher
    opt, topt = make_opts(list(ours.parameters()), list(theirs.parameters()))
    losses, tlosses = [], []
    for i in range(steps):
        j = (8 * i) % 64
        x, y = data[j : j + 8], labels[j : j + 8]
        loss = F.cross_entropy(ours(Tensor(x, dtype=dtype)), y)
        opt.zero_grad()
        loss.backward()
        tl = torch.nn.functional.cross_entropy(theirs(torch.tensor(x, dtype=getattr(torch,
                                                                                    dtype))),
                                               torch.from_numpy(y))
        topt.zero_grad()
        tl.backward()
        if clip is not None:
            n1 = optim.clip_grad_norm_(ours.parameters(), clip)
            n2 = torch.nn.utils.clip_grad_norm_(theirs.parameters(), clip).item()
            assert abs(n1 - n2) <= 1e-5 * n2
        opt.step()
        topt.step()
        losses.append(loss.item())
        tlosses.append(tl.item())
    return np.array(losses), np.array(tlosses)


def _assert_weights_close(ours, theirs, rtol, atol):
    tsd = theirs.state_dict()
    for k, v in ours.state_dict().items():
        np.testing.assert_allclose(v, tsd[k].numpy(), rtol=rtol, atol=atol, err_msg=k)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-4), ("float64", 1e-9)])
def test_adamw_50_steps_match_torch(dtype, tol):
    ours, theirs = _mlp_pair(dtype)

    def make(p, tp):
        return (optim.AdamW(p, lr=3e-3, weight_decay=0.1),
                torch.optim.AdamW(tp, lr=3e-3, weight_decay=0.1))

    losses, tlosses = _train(ours, theirs, make, 50, dtype, clip=1.0)
    np.testing.assert_allclose(losses, tlosses, rtol=tol)
    assert losses[-10:].mean() < losses[:10].mean()  # it actually trained
    _assert_weights_close(ours, theirs, rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("momentum,nesterov,wd", [(0.0, False, 0.0), (0.9, False, 1e-2),
                                                  (0.9, True, 0.0)])
def test_sgd_matches_torch(momentum, nesterov, wd):
    ours, theirs = _mlp_pair("float64")

    def make(p, tp):
        kw = dict(lr=0.05, momentum=momentum, nesterov=nesterov, weight_decay=wd)
        return optim.SGD(p, **kw), torch.optim.SGD(tp, **kw)

    losses, tlosses = _train(ours, theirs, make, 15, "float64")
    np.testing.assert_allclose(losses, tlosses, rtol=1e-10)
    _assert_weights_close(ours, theirs, rtol=1e-9, atol=1e-12)


def test_optimizer_state_dict_resume_is_exact():
    def run(steps, resume_at=None):
        ours, _ = _mlp_pair("float64")
        opt = optim.AdamW(ours.parameters(), lr=1e-2)
        sched = optim.WarmupCosine(opt, 3, 10)
        rng = np.random.default_rng(1)
        for i in range(steps):
            if resume_at is not None and i == resume_at:
                sd, osd, ssd = ours.state_dict(), opt.state_dict(), sched.state_dict()
                ours, _ = _mlp_pair("float64")
                opt = optim.AdamW(ours.parameters(), lr=123.0)
                sched = optim.WarmupCosine(opt, 3, 10)
                ours.load_state_dict(sd)
                opt.load_state_dict(osd)
                sched.load_state_dict(ssd)
            x, y = rng.standard_normal((4, 6)), rng.integers(0, 4, size=4)
            opt.zero_grad()
            F.cross_entropy(ours(Tensor(x, dtype="float64")), y).backward()
            opt.step()
            sched.step()
        return ours.state_dict()

    a, b = run(8), run(8, resume_at=4)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_fused_adamw_twins_agree():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        p, g, m = (rng.standard_normal((7, 5)).astype(dtype) for _ in range(3))
        v = np.abs(rng.standard_normal((7, 5))).astype(dtype)
        checked = check_op(optim.adamw_update, p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, 3,
                           rtol=1e-5, atol=1e-7, require_fast=numba_available())
        assert checked == (["numba"] if numba_available() else [])


@pytest.mark.gpu
def test_fused_adamw_gpu(xp):
    rng = np.random.default_rng(0)
    p, g, m = (xp.asarray(rng.standard_normal((33, 5)), dtype=np.float32) for _ in range(3))
    v = xp.abs(xp.asarray(rng.standard_normal((33, 5)), dtype=np.float32))
    assert check_op(optim.adamw_update, p, g, m, v, 1e-3, 0.9, 0.999, 1e-8, 0.01, 3,
                    rtol=1e-5, atol=1e-7, require_fast=True)


def test_clip_grad_norm_and_nonfinite():
    a = Tensor(np.zeros(3), requires_grad=True)
    b = Tensor(np.zeros(2), requires_grad=True)
    a.grad = np.array([3.0, 0.0, 0.0], dtype=np.float32)
    b.grad = np.array([0.0, 4.0], dtype=np.float32)
    total = optim.clip_grad_norm_([a, b], 1.0)
    assert total == pytest.approx(5.0)
    assert math.sqrt(float((a.grad**2).sum() + (b.grad**2).sum())) == pytest.approx(1.0, 1e-5)
    a.grad[0] = np.inf
    assert not math.isfinite(optim.clip_grad_norm_([a, b], 1.0))


def test_warmup_cosine_and_constant():
    p = Tensor(np.zeros(1), requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = optim.WarmupCosine(opt, warmup_steps=4, total_steps=14, min_lr_ratio=0.1)
    lrs = [opt.lr]
    for _ in range(16):
        sched.step()
        lrs.append(opt.lr)
    assert lrs[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert lrs[4] == pytest.approx(1.0)
    assert lrs[9] == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert lrs[14] == pytest.approx(0.1) and lrs[16] == pytest.approx(0.1)
    assert all(x >= y for x, y in zip(lrs[4:], lrs[5:]))
    opt2 = optim.SGD([p], lr=0.3)
    c = optim.ConstantLR(opt2, factor=1.0, total_iters=0)
    c.step()
    assert c.get_lr() == [0.3] and opt2.lr == 0.3
    with pytest.raises(ValueError, match="warmup_steps"):
        optim.WarmupCosine(opt, 5, 3)


def test_optimizer_argument_errors():
    p = Tensor(np.zeros(1), requires_grad=True)
    with pytest.raises(ValueError, match="beta1"):
        optim.AdamW([p], betas=(1.5, 0.9))
    with pytest.raises(ValueError, match="nesterov"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty"):
        optim.AdamW([])


def test_param_groups_and_base_signature():
    a = Tensor(np.ones(2), requires_grad=True)
    b = Tensor(np.ones(2), requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad = np.ones(2, dtype=np.float32)
    b.grad = np.ones(2, dtype=np.float32)
    opt.step()
    np.testing.assert_allclose(a.data, 0.9)
    np.testing.assert_allclose(b.data, 0.5)

    class Plain(optim.Optimizer):  # the contract's base signature
        def step(self):
            for p in self._params():
                p.data -= self.lr * p.grad

    Plain([a], 0.25).step()
    np.testing.assert_allclose(a.data, 0.65)

"""Training steps on :mod:`.strictcupy` device arrays (which refuse any implicit move to numpy,
as cupy's do) give the plain numpy run's numbers, and those are torch's.

Each program runs three times: in torch 2.x (the oracle), in skiff on the CPU, and in skiff on
the strict fake ``cuda:0``. The CPU run must match torch (float64, 1e-10) and the device run
the CPU run (1e-12: the same numpy operations in the same order). A device step also reads
nothing back to the host (no ``float()``/``.item()``/``.get()``: each such read is a stall of
the GPU's queue) and copies no host array over (an index or a mask built with numpy), both
counted by the fake.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

import skiff
from skiff.kernels.train.core import nn
from skiff.kernels.train.core.nn import functional as F

from . import strictcupy

SKIFF = types.SimpleNamespace(nn=nn, F=F, optim=skiff.optim, tensor=skiff.tensor,
                              f64=skiff.float64, dev="cuda:0")
TORCH = types.SimpleNamespace(nn=torch.nn, F=torch.nn.functional, optim=torch.optim,
                              tensor=torch.tensor, f64=torch.float64, dev="cpu")


def host(x):
    if hasattr(x, "detach"):
        x = x.detach()
    if isinstance(x, torch.Tensor):
        return x.numpy().copy()
    x = getattr(x, "_data", x)
    return x.get() if isinstance(x, strictcupy.StrictArray) else np.array(x)


def twin(ours_cpu, build_torch):
    """A torch module with the weights of a skiff module."""
    theirs = build_torch().double()
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in
                            ours_cpu.state_dict().items()})
    return theirs


def run_three(program, monkeypatch, rtol_torch=1e-10):
    """program(lib, device) -> list of results; torch vs CPU, CPU vs the strict device."""
    theirs = program(TORCH, "cpu")
    ours = program(SKIFF, "cpu")
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(host(a), host(b), rtol=rtol_torch, atol=1e-12)
    strictcupy.install(monkeypatch)
    on_device = program(SKIFF, "cuda:0")
    for a, b in zip(on_device, ours, strict=True):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-12, atol=1e-14)
    return on_device


# ---- an MLP step with each optimizer and schedule ------------------------------------------------
def _mlp(lib):
    m = lib.nn
    return m.Sequential(m.Linear(6, 8), m.GELU(), m.LayerNorm(8), m.Linear(8, 3))


OPTIMIZERS = {
    "SGD": dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "Adam": dict(lr=0.01, amsgrad=True),
    "AdamW": dict(lr=0.01, weight_decay=0.1),
    "RMSprop": dict(lr=0.01, momentum=0.5, centered=True),
    "Adagrad": dict(lr=0.1),
}
SCHEDULES = {
    "StepLR": lambda S, o: S.StepLR(o, 1, 0.5),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(o, 4),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=10),
    "ReduceLROnPlateau": lambda S, o: S.ReduceLROnPlateau(o, patience=0),
    "ExponentialLR": lambda S, o: S.ExponentialLR(o, 0.9),
    "LinearLR": lambda S, o: S.LinearLR(o),
}


def mlp_program(opt_name, schedule=None, steps=3):
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = _mlp(SKIFF).double()
        model = ours if lib is SKIFF else twin(ours, lambda: _mlp(TORCH))
        model = model.to(dev) if lib is SKIFF else model
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.standard_normal((5, 6)), dtype=lib.f64)
        y = lib.tensor(np.array([0, 1, 2, 1, 0]))
        if lib is SKIFF:
            x, y = x.to(dev), y.to(dev)
        opt = getattr(lib.optim, opt_name)(model.parameters(), **OPTIMIZERS[opt_name])
        sched = SCHEDULES[schedule](lib.optim.lr_scheduler, opt) if schedule else None
        out = []
        for _ in range(steps):
            loss = lib.F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if sched is not None:
                sched.step(loss.item()) if schedule == "ReduceLROnPlateau" else sched.step()
            out.append(loss.item())
        return out + [p for p in model.parameters()]

    return program


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_mlp_step_with_each_optimizer(monkeypatch, opt_name):
    run_three(mlp_program(opt_name), monkeypatch)


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_mlp_step_with_each_schedule(monkeypatch, schedule):
    run_three(mlp_program("SGD", schedule), monkeypatch)


def _cnn(lib):
    m = lib.nn
    # no bias before the batch norm: its gradient is zero up to rounding, which Adam amplifies
    return m.Sequential(m.Conv2d(2, 3, 3, padding=1, bias=False), m.BatchNorm2d(3), m.ReLU(),
                        m.MaxPool2d(2), m.Flatten(), m.Linear(3 * 4 * 4, 4))


def test_cnn_step(monkeypatch):
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = _cnn(SKIFF).double()
        model = ours.to(dev) if lib is SKIFF else twin(ours, lambda: _cnn(TORCH))
        x = lib.tensor(np.random.default_rng(1).standard_normal((2, 2, 8, 8)), dtype=lib.f64)
        x = x.to(dev) if lib is SKIFF else x
        opt = lib.optim.Adam(model.parameters(), lr=1e-2)
        out = []
        for _ in range(2):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out + [p for p in model.parameters()] + [model[1].running_var]

    run_three(program, monkeypatch)


def _gpt(lib):
    m = lib.nn

    class Tiny(m.Module):
        def __init__(self):
            super().__init__()
            self.emb = m.Embedding(11, 8)
            self.block = m.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
            self.head = m.Linear(8, 11)

        def forward(self, idx, mask):
            return self.head(self.block(self.emb(idx), src_mask=mask, is_causal=True))

    return Tiny()


def test_gpt_step(monkeypatch):
    def program(lib, dev):
        skiff.manual_seed(0)
        ours = _gpt(SKIFF).double()
        model = ours.to(dev) if lib is SKIFF else twin(ours, lambda: _gpt(TORCH))
        idx = lib.tensor(np.random.default_rng(2).integers(0, 11, (2, 5)))
        mask = lib.tensor(np.triu(np.full((5, 5), -np.inf), 1), dtype=lib.f64)
        if lib is SKIFF:
            idx, mask = idx.to(dev), mask.to(dev)
        opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
        out = []
        for _ in range(2):
            loss = lib.F.cross_entropy(model(idx, mask).reshape(-1, 11), idx.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out + [model.head.weight, model.emb.weight]

    run_three(program, monkeypatch)


# ---- a device step reads nothing back ------------------------------------------------------------
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_a_device_step_reads_nothing_back(monkeypatch, opt_name):
    """torch's step reads nothing back either; each read would drain the GPU's queue."""
    strictcupy.install(monkeypatch)
    skiff.manual_seed(0)
    model = _mlp(SKIFF).to("cuda:0")
    x = skiff.tensor(np.random.default_rng(0).standard_normal((8, 6)), dtype=skiff.float32)
    x, y = x.to("cuda:0"), skiff.tensor(np.arange(8) % 3).to("cuda:0")
    opt = getattr(skiff.optim, opt_name)(model.parameters(), **OPTIMIZERS[opt_name])
    for step in range(3):
        if step == 2:  # the first steps create the optimizer's state
            strictcupy.SYNCS.clear()
            strictcupy.UPLOADS.clear()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert strictcupy.SYNCS == [] and strictcupy.UPLOADS == []  # nor copies host arrays over
    loss.item()
    assert len(strictcupy.SYNCS) == 1  # the counter sees a read

"""Round 28: the optimizers that share the base's per-parameter prologue
(``Optimizer._each``: skip a parameter without gradient, ``maximize``, L2 or decoupled weight
decay, state made on first use, the step counted) against torch 2.13 in float64: two groups
with their own hyper-parameters, a parameter without a gradient in some steps, 6 steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff

CASES = [
    ("Adadelta", {"lr": 0.5, "weight_decay": 0.05, "maximize": True}),
    ("Rprop", {"lr": 0.02, "maximize": True}),
    ("RMSprop", {"lr": 0.01, "weight_decay": 0.1, "momentum": 0.5, "centered": True}),
    ("RMSprop", {"lr": 0.01, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1, "lr_decay": 0.01, "maximize": True,
                 "initial_accumulator_value": 0.2}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
]


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_prologue_against_torch(name, kw):
    rng = np.random.default_rng(285)
    w0 = [rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((2, 3))]
    data = [rng.standard_normal((5, 3)) for _ in range(6)]
    runs = []
    for lib in (skiff, torch):
        ps = [lib.tensor(w, requires_grad=True) for w in w0]
        opt = getattr(lib.optim, name)(
            [{"params": ps[:2]}, {"params": ps[2:], "lr": kw["lr"] * 0.5}], **kw)
        hist = []
        for step, x in enumerate(data):
            opt.zero_grad()
            h = (lib.tensor(x) @ ps[0] + ps[1]).tanh()
            loss = (h * h).mean()
            if step % 2 == 0:  # ps[2] gets a gradient only in even steps
                loss = loss + (lib.tensor(x[:2]) @ ps[2].t()).sin().sum()
            loss.backward()
            opt.step()
            hist.append([np.array(p.detach().numpy()) for p in ps])
        runs.append(hist)
    for a, b in zip(*runs):
        for pa, pb in zip(a, b):
            np.testing.assert_allclose(pa, pb, rtol=1e-12, atol=1e-13)

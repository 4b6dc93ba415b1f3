"""The captured training step's update (core/graph.py) on the CPU: its plain twin against the
eager clipping and AdamW, and when a run is captured. The capture itself needs a GPU:
tests/gpu_readiness/test_step_graph_gpu.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skiff.kernels.train.core import optim
from skiff.kernels.train.core.graph import StepGraph, update_reference
from skiff.kernels.train.core.tensor import Tensor


def _params(rng, shapes, dtype=np.float32):
    return [Tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in shapes]


@pytest.mark.parametrize("clip", [None, 0.5, 1e6])
def test_update_twin_matches_eager_clipping_and_adamw_over_steps(clip):
    rng = np.random.default_rng(3)
    shapes = [(4, 3), (7,), (2, 2, 5)]
    eager = _params(rng, shapes)
    twin = [Tensor(p._data.copy(), requires_grad=True) for p in eager]
    groups = [{"params": eager[:2]}, {"params": eager[2:], "weight_decay": 0.0}]
    opt = optim.AdamW(groups, lr=3e-2, betas=(0.8, 0.95), weight_decay=0.1)
    tgroups = [{"params": twin[:2]}, {"params": twin[2:], "weight_decay": 0.0}]
    topt = optim.AdamW(tgroups, lr=3e-2, betas=(0.8, 0.95), weight_decay=0.1)
    graph = StepGraph(None, topt, None, clip=clip)
    for step in range(1, 5):
        grads = [rng.standard_normal(s).astype(np.float32) * 3 for s in shapes]
        for p, g in zip(eager, grads):
            p.grad = g.copy()
        norm = optim.clip_grad_norm_(eager, clip) if clip is not None else None
        opt.step()
        for p in twin:  # the twin's state as the captured step keeps it
            topt.state.setdefault(p, {"step": 0, "exp_avg": np.zeros_like(p.data),
                                      "exp_avg_sq": np.zeros_like(p.data)})
        steps = graph._advance()
        st = [topt.state[p] for p in twin]
        loss, sumsq = update_reference([p.data for p in twin], [g.copy() for g in grads],
                                       [s["exp_avg"] for s in st], [s["exp_avg_sq"] for s in st],
                                       graph._doubles(steps), 1.25, clip=clip)
        for g in opt.param_groups + topt.param_groups:
            g["lr"] *= 0.7  # a schedule: each step's own rate reaches the table
        assert steps == [step] * 3 and loss == 1.25
        want = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads))
        assert math.sqrt(sumsq) == pytest.approx(want, rel=1e-12)
        if norm is not None:
            assert norm == pytest.approx(want, rel=1e-5)
        for a, b in zip(eager, twin):
            np.testing.assert_allclose(b.data, a.data, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(topt.state[b]["exp_avg_sq"], opt.state[a]["exp_avg_sq"],
                                       rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("bad", ["loss", "grad"])
def test_update_twin_leaves_everything_when_the_step_is_not_finite(bad):
    rng = np.random.default_rng(4)
    p, g = rng.standard_normal(6), rng.standard_normal(6)
    if bad == "grad":
        g[2] = np.inf
    m, v = np.zeros(6), np.zeros(6)
    before = p.copy()
    doubles = np.array([[0.99, 0.9, 0.999, 1e-8, 1e-2, 0.03]])
    loss, sumsq = update_reference([p], [g], [m], [v], doubles,
                                   math.nan if bad == "loss" else 1.0, clip=1.0)
    assert not (math.isfinite(loss) and math.isfinite(sumsq))
    np.testing.assert_array_equal(p, before)
    assert not m.any() and not v.any()


def test_a_cpu_run_is_not_captured_and_says_why():
    from skiff.kernels.backend.devices import resolve_device
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.core import nn
    from skiff.kernels.train.trainer import Trainer

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.AdamW(model.parameters())
    assert StepGraph.unsupported(model, opt, resolve_device("cpu")) == "not on a GPU"

    logs = []

    class Rep(NullReporter):
        def log(self, message, *, level="info"):
            logs.append(message)

    x = np.random.default_rng(0).standard_normal((32, 3)).astype("f4")
    y = (x[:, 0] > 0).astype("i8")
    trainer = Trainer(model, batch_size=8, cuda_graph=True, reporter=Rep())
    result = trainer.train((x, y), epochs=1)
    assert result.steps == 4 and trainer._graph is None
    assert any("cuda_graph=True: the step runs eagerly" in m and "not on a GPU" in m
               for m in logs)
    with pytest.raises(ValueError, match="cuda_graph must be None"):
        Trainer(model, cuda_graph="yes")

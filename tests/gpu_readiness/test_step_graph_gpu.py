"""The training step replayed as a CUDA graph (core/graph.py) against its references, on a
GPU (these skip without one): the update kernels against ``update_reference``, and the
Trainer's captured steps against the same run stepped eagerly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skiff.kernels.backend import cupy, to_numpy

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("clip,loss", [(None, 1.5), (0.3, 1.5), (1e9, 1.5), (0.3, math.nan)])
def test_captured_update_kernels_match_the_reference(dtype, clip, loss):
    from skiff.kernels.train.core import graph as G
    from skiff.kernels.train.core import optim
    from skiff.kernels.train.core.tensor import Tensor

    cp = cupy()
    rng = np.random.default_rng(5)
    shapes = [(3, 4), (70_001,), (17, 5)]
    params = [Tensor(cp.asarray(rng.standard_normal(s), dtype=dtype), requires_grad=True,
                     dtype=dtype) for s in shapes]
    opt = optim.AdamW(params, lr=1e-2)
    for p in params:
        opt.state[p] = {"step": 2, "exp_avg": cp.asarray(rng.standard_normal(p.shape), dtype),
                        "exp_avg_sq": cp.asarray(rng.random(p.shape), dtype)}
    grads = [cp.asarray(rng.standard_normal(s), dtype=dtype) for s in shapes]
    host = [(to_numpy(p.data).copy(), to_numpy(g).copy(), to_numpy(opt.state[p]["exp_avg"]),
             to_numpy(opt.state[p]["exp_avg_sq"])) for p, g in zip(params, grads)]
    graph = G.StepGraph(None, opt, None, clip=clip)
    doubles = graph._doubles([3, 3, 3])
    want = G.update_reference([h[0] for h in host], [h[1] for h in host],
                              [h[2] for h in host], [h[3] for h in host], doubles, loss, clip)
    tables = G._Tables(cp, params, grads, opt)
    tables.write_doubles(doubles)
    tables.upload()
    status = cp.asarray([loss, 0.0])
    G._launch_update(cp, tables, status, clip, dtype)
    got = to_numpy(status)
    assert got[1] == pytest.approx(want[1], rel=1e-5 if dtype == np.float32 else 1e-12)
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-13}
    for p, g, h in zip(params, grads, host):
        np.testing.assert_allclose(to_numpy(p.data), h[0], **tol)
        np.testing.assert_allclose(to_numpy(g), h[1], **tol)
        np.testing.assert_allclose(to_numpy(opt.state[p]["exp_avg_sq"]), h[3], **tol)


def _gpt_run(cuda_graph, steps=8, dropout=0.0):
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.models.gpt import GPT, GPTConfig
    from skiff.kernels.train.trainer import Trainer

    logs = []

    class Rep(NullReporter):
        def log(self, message, *, level="info"):
            logs.append(message)

    from skiff.kernels.train.core import random as train_random

    train_random.seed(0)
    model = GPT(GPTConfig(block_size=32, n_layer=2, n_head=2, n_embd=32, dropout=dropout))
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 256, (24, 33))
    data = (tokens[:, :-1].astype(np.int64), tokens[:, 1:].astype(np.int64))
    trainer = Trainer(model, device="cuda", batch_size=8, cuda_graph=cuda_graph,
                      reporter=Rep(), clip=0.5, seed=3)
    result = trainer.train(data, steps=steps)
    weights = [to_numpy(p.data) for p in model.parameters()]
    return result, weights, trainer, logs


def test_trainer_captured_steps_match_the_eager_run():
    eager, w_eager, _, _ = _gpt_run(False)
    graph, w_graph, trainer, logs = _gpt_run(None)
    assert trainer._graph is not None and trainer._graph.reason is None, logs
    assert trainer._graph.replays == 7  # the first step eager, the second captured and run
    assert any("captured as a CUDA graph" in m for m in logs)
    assert trainer._graph.memory_bytes() > 0  # counted in the run's peak memory
    assert graph.peak_memory_bytes >= trainer._graph.memory_bytes()
    for a, b in zip(eager.history, graph.history):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-4)
        assert b["lr"] == a["lr"]
    for a, b in zip(w_eager, w_graph):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def _views(cp, dtype):
    rng = np.random.default_rng(7)
    a = cp.asarray(rng.standard_normal((2, 3, 6, 5)), dtype=dtype)
    b = cp.asarray(rng.standard_normal((2, 3, 5, 4)), dtype=dtype)
    w = cp.asarray(rng.standard_normal((4, 5)), dtype=dtype)
    qkv = cp.asarray(rng.standard_normal((2, 6, 3, 3, 5)), dtype=dtype)
    heads = qkv.transpose(2, 0, 3, 1, 4)  # three (B, H, T, D) views
    yield a, b
    yield a, cp.swapaxes(a, -1, -2)
    yield cp.swapaxes(b, -1, -2), cp.swapaxes(a, -1, -2)
    yield a[0, 0], w.T
    yield a[0, 0].T, a[0, 1]
    yield a, w.T
    yield heads[0], cp.swapaxes(heads[1], -1, -2)
    yield a[:, :, 1:4], b[..., :2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_through_skiffs_cublas_handle_match_cupy(dtype):
    from skiff.kernels.train.core import gemm

    cp = cupy()
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for a, b in _views(cp, dtype):
        with gemm.own_cublas():
            got = gemm.mm(a, b)
        np.testing.assert_allclose(to_numpy(got), to_numpy(a @ b), **tol)


def test_a_product_is_recorded_in_a_graph_and_replays_with_new_inputs():
    from skiff.kernels.train.core import gemm

    cp = cupy()
    rng = np.random.default_rng(8)
    a = cp.asarray(rng.standard_normal((4, 32, 16)), dtype=cp.float32)
    b = cp.asarray(rng.standard_normal((16, 8)), dtype=cp.float32)
    out = cp.zeros((4, 32, 8), dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream, gemm.own_cublas():
        out[...] = gemm.mm(a, cp.swapaxes(b.T, -1, -2))  # warm: handle, stream, workspace
        stream.synchronize()
        stream.begin_capture(mode=cp.cuda.runtime.streamCaptureModeThreadLocal)
        try:
            out[...] = gemm.mm(a, b.T.T)
        finally:
            graph = stream.end_capture()
    a[...] = cp.asarray(rng.standard_normal(a.shape), dtype=cp.float32)
    graph.launch()
    cp.cuda.Device().synchronize()
    np.testing.assert_allclose(to_numpy(out), to_numpy(a @ b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_step_graph_alone_captures_or_gives_up_keeping_the_step_it_ran(dropout):
    """StepGraph on its own: captured (no dropout) or given up (dropout draws random numbers,
    after the step it ran eagerly, which counts once), four steps give the eager run's
    weights."""
    from skiff.kernels.train.core import optim
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.core.graph import StepGraph
    from skiff.kernels.train.models.gpt import GPT, GPTConfig
    from skiff.kernels.train.strategy import SingleDevice

    rng = np.random.default_rng(2)
    tokens = rng.integers(0, 256, (4, 8, 17))

    def run(use_graph):
        train_random.seed(0)
        strategy = SingleDevice().bind(device="cuda")
        model, opt = strategy.setup(
            GPT(GPTConfig(block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=dropout)),
            lambda ps: optim.AdamW(ps, lr=1e-2))
        graph = StepGraph(model, opt, lambda m, b: m.loss(b), clip=0.5)
        losses = []
        for t in tokens:
            x, y = strategy.to_device((t[:, :-1].copy(), t[:, 1:].copy()))
            taken = graph.step((x, y)) if use_graph else None
            if taken is None:
                loss = model.loss((x, y))
                loss.backward()
                optim.clip_grad_norm_(list(model.parameters()), 0.5)
                opt.step()
                opt.zero_grad()
                taken = (float(loss.item()), None)
            losses.append(taken[0])
        steps = {opt.state[p]["step"] for p in model.parameters()}
        return losses, [to_numpy(p.data) for p in model.parameters()], steps, graph

    want, w_want, _, _ = run(False)
    got, w_got, steps, graph = run(True)
    assert steps == {4}
    if dropout:
        assert "random numbers" in graph.reason and graph.replays == 0
    else:
        assert graph.reason is None and graph.replays == 3, graph.reason
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(w_want, w_got):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def _small_models():
    from skiff.kernels.train.core import nn
    from skiff.kernels.train.models.cnn import CNN

    yield "mlp", (lambda: nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32),
                                        nn.Linear(32, 5))), (12,)
    yield "cnn", (lambda: CNN(in_channels=1, num_classes=5, image_size=16)), (1, 16, 16)
    yield "cnn+bn", (lambda: nn.Sequential(
        nn.Conv2d(1, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(6 * 8 * 8, 5))), (1, 16, 16)


@pytest.mark.parametrize("name", ["mlp", "cnn", "cnn+bn"])
def test_small_models_of_skiffs_modules_are_captured_and_train_as_eagerly(name):
    """Written for the next GPU session (not yet run on one): an MLP and CNNs (im2col GEMMs,
    batch norm's sums, max pooling) captured by default, the same run as eager steps."""
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.trainer import Trainer

    make, shape = next((m, s) for n, m, s in _small_models() if n == name)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((40,) + shape).astype(np.float32)
    y = rng.integers(0, 5, 40)

    def run(cuda_graph):
        logs = []

        class Rep(NullReporter):
            def log(self, message, *, level="info"):
                logs.append(message)

        train_random.seed(0)
        model = make()
        trainer = Trainer(model, device="cuda", batch_size=8, cuda_graph=cuda_graph,
                          reporter=Rep(), seed=1, shuffle=False)
        result = trainer.train((x, y), epochs=2)
        state = [np.asarray(to_numpy(v)) for v in model.state_dict().values()]
        return result, state, trainer, logs

    eager, s_eager, _, _ = run(False)
    graph, s_graph, trainer, logs = run(None)
    assert trainer._graph is not None and trainer._graph.reason is None, logs
    assert trainer._graph.replays == 9  # 10 steps of one shape: one eager, nine replayed
    for a, b in zip(eager.history, graph.history):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4)
    for a, b in zip(s_eager, s_graph):  # weights and batch norm's running statistics
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)

"""Round 48 (h4): what ``strategy="auto"`` prints for a model that does not fit one rank.

A GPT of 30,080 parameters on 2 ranks of ``device_memory="400KB"`` (``Trainer(m,
strategy="auto", device_memory=...)`` under ``mpiexec -n 2``): the planner cuts it over pp=2
(checked on 2 ranks: losses equal one process's to 5e-7, float32). Its plan said "plain
data parallel needs 0.5 MiB a device, 0.3 MiB usable; pp=2 brings it to 0.3 MiB", and among
its reasons "plain data parallel does not fit: needs 0.6 MiB per device (params 0.1 MiB,
grads 0.1 MiB, optimizer 0.1 MiB, activations 0.0 MiB), but a device has 0.3 MiB usable":
the numbers that decide it could not be told apart, and the summary costed plain data
parallel one row at a time, a layout the Trainer never runs (it runs a rank's rows at once
outside a pipeline), so it disagreed with the reasons. Sizes under 1 MiB now have three
figures in KiB and the summary's plain data parallel is the Trainer's; the reasons' leanest
says that it recomputes. Oracles: the parameter count of the model (4 bytes each in float32,
AdamW's two moments 8) and the cost model's estimate of the layout the Trainer would run,
costed here; 400 KB and its 90% by hand. And a float64 model's plan costed its weights,
gradients and moments at 4 bytes (the Trainer's precision "32"): now at its 8.
"""

from __future__ import annotations

import re

import pytest

import skiff
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.plan.cost import Choice, estimate
from skiff.kernels.train.plan.planner import _gb, resolve


@pytest.mark.parametrize("nbytes, text", [
    (0, "0 bytes"), (1000, "1000 bytes"), (8512, "8.31 KiB"), (51200, "50.0 KiB"),
    (543000, "530 KiB"), (2**20 - 1, "1.0 MiB"), (2**20 * 3.25, "3.2 MiB")])
def test_sizes_under_a_mib_have_three_figures(nbytes, text):
    assert _gb(nbytes) == text  # 8512 / 1024 = 8.3125, 543000 / 1024 = 530.27


def _kib(pattern, text):
    return [float(v) for v in re.search(pattern, text).groups()]


def test_a_gpt_cut_over_two_ranks_says_why_in_figures_that_differ():
    with skiff.random.fork_rng():
        skiff.manual_seed(0)
        m = GPT(GPTConfig(vocab_size=64, block_size=16, n_layer=2, n_head=2, n_embd=32))
    n = sum(p.size for p in m.parameters())
    # as the Trainer plans it: 4 rows a step over 2 ranks, float32 weights and gradients
    p = resolve("auto", m, world_size=2, device_memory=400_000, global_batch=4, seq_len=16,
                weight_bytes=4, grad_bytes=4)
    assert p.strategy == "pp"
    needs, usable, brought = _kib(r"plain data parallel needs ([\d.]+) KiB a device, "
                                  r"([\d.]+) KiB usable; pp=2 brings it to ([\d.]+) KiB",
                                  p.summary)
    assert usable == round(0.9 * 400_000 / 1024)  # 351.6
    assert needs > usable > brought
    # plain data parallel as the Trainer runs it: each rank's 2 rows at once (the summary
    # costed one row at a time before, under the reasons' leanest figure)
    plain = estimate(p.model, p.cluster, Choice(dp=2, micro_batch=2), global_batch=4,
                     weight_bytes=4, grad_bytes=4)
    assert needs == pytest.approx(plain.peak_memory / 1024, abs=0.5)
    assert brought == pytest.approx(p.estimate.peak_memory / 1024, abs=0.5)
    line = next(r for r in p.reasons if r.startswith("plain data parallel does not fit"))
    assert line.startswith("plain data parallel does not fit, even recomputing activations: ")
    lean, params, grads, opt = _kib(r"needs ([\d.]+) KiB per device \(params ([\d.]+) KiB, "
                                    r"grads ([\d.]+) KiB, optimizer ([\d.]+) KiB", line)
    assert params == grads == pytest.approx(4 * n / 1024, abs=0.5)  # 117.5 KiB
    assert opt == pytest.approx(8 * n / 1024, abs=0.5)
    assert usable < lean < needs  # recomputing saves activations, not enough


@pytest.mark.parametrize("dtype, size", [("float64", 8), ("float32", 4)])
def test_a_float64_models_plan_costs_eight_bytes_an_element(dtype, size):
    """A float64 model trains in float64 under the Trainer's precision "32", but its plan
    costed 4 bytes a weight, gradient and moment ("params 588 bytes" for 147 float64
    parameters): half its memory, so "auto" could choose a layout that does not fit. The
    hand count: 147 parameters of ``size`` bytes, AdamW's two moments, ZeRO-2's halves."""
    m = skiff.nn.Sequential(skiff.nn.Linear(5, 16), skiff.nn.ReLU(), skiff.nn.Linear(16, 3))
    m = m.double() if dtype == "float64" else m
    n = sum(p.size for p in m.parameters())
    assert n == 147
    # as the Trainer plans it: 8 rows over 2 ranks, precision "32" (4-byte weights and
    # gradients); 6000 bytes: plain data parallel does not fit, ZeRO-2 does (float64)
    p = resolve("auto", m, world_size=2, device_memory=6000 * size // 8, global_batch=8,
                weight_bytes=4, grad_bytes=4)
    assert p.strategy == "zero2"
    mem = p.estimate.memory
    assert mem["params"] == n * size
    assert mem["grads"] == mem["master_shard"] == n * size / 2
    assert mem["optimizer"] == 2 * n * size / 2
    line = next(r for r in p.reasons if r.startswith("plain data parallel does not fit"))
    said = {k: float(v) * (1024 if unit == "KiB" else 1) for k, v, unit in re.findall(
        r"(params|grads|optimizer) ([\d.]+) (bytes|KiB)", line)}
    assert said["params"] == said["grads"] == pytest.approx(n * size, rel=5e-3)  # 1.15 KiB
    assert said["optimizer"] == pytest.approx(2 * n * size, rel=5e-3)

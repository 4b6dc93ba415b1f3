"""The planner's check: the cost model plus the measured fixed costs agrees with a real run's
peak resident set (memory is deterministic enough to test; step time is left to the notebook
and the benchmarks), and it says why when it does not agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skiff.kernels.train.plan.check import Calibration, compare, describe, expected

ROOT = Path(__file__).resolve().parents[4]

ESTIMATE = {"memory": {"params": 400, "grads": 400, "optimizer": 800, "activations": 1000},
            "step_time": 1e-4, "peak_memory": 2600}


def test_expected_adds_the_measured_fixed_costs_to_the_cost_model():
    calib = Calibration(local_step_s=0.010, baseline_bytes=10_000, allreduce_s=0.002, rows=4,
                        step_peak_bytes=900)
    exp = expected(ESTIMATE, calib, n_params=100, weight_bytes=4, dp=2)
    # baseline + all-reduce buckets + optimizer state + the micro-run step's peak of
    # activations and gradients together (measured: each counted once; summing 400 B of
    # gradients and 1.2 x 1000 B of activations counted both whole at once)
    assert exp["peak_bytes"] == 10_000 + 400 + 800 + 900
    assert exp["step_s"] == pytest.approx(0.010 + 0.002)   # the micro-run has no all-reduce
    one = expected(ESTIMATE, calib, n_params=100, weight_bytes=4, dp=1)
    assert one["peak_bytes"] == exp["peak_bytes"] - 400  # no buckets on one rank
    # no micro-run step measured: the cost model's gradients and 1.2 x its activations
    formula = expected(ESTIMATE, Calibration(baseline_bytes=10_000), n_params=100, dp=2)
    assert formula["peak_bytes"] == 10_000 + 400 + 400 + 800 + 1200
    assert "step_s" not in formula
    # a process that peaked higher before training (kernels compiled into a cold cache)
    calib.peak_before_bytes = 50_000
    hot = expected(ESTIMATE, calib, n_params=100, weight_bytes=4, dp=2)
    assert hot["peak_bytes"] == 50_000 and "compiled" in hot["peak_from"]


def test_compare_agrees_within_tolerance_and_says_why_not():
    exp = {"peak_bytes": 1000, "step_s": 0.010}
    ok = compare(exp, 0.0115, 1080, load=0.5, cores=2)
    assert ok["agrees"] and ok["why"] == ""
    assert ok["memory_ratio"] == pytest.approx(1.08) and ok["step_ratio"] == pytest.approx(1.15)
    off = compare(exp, 0.030, 1500, load=9.0, cores=2)
    assert not off["agrees"]
    assert "memory 1.50x" in off["why"] and "step time 3.00x" in off["why"]
    assert "load average was 9.0 on 2 cores" in off["why"]
    assert "(off: memory 1.50x" in describe(off)
    assert describe(ok).endswith("(agrees)")


@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_a_real_run_peaks_where_the_check_expects(cache, tmp_path):
    """A fresh process: the micro-run, then 8 Trainer steps of a small GPT; its peak RSS is
    within 10% of baseline + state + activations, with numba's cache warm or cold (compiling
    the kernels peaks above what stays resident)."""
    code = textwrap.dedent("""
        import json, resource
        import skiff
        from skiff.kernels.train.calibrate import micro_run
        from skiff.kernels.train.data import TextDataset
        from skiff.kernels.train.models import GPT, GPTConfig
        from skiff.kernels.train.plan import resolve
        from skiff.kernels.train.plan.check import compare, expected

        skiff.seed(0)
        model = GPT(GPTConfig(block_size=64, n_layer=2, n_head=2, n_embd=64))
        data = TextDataset("sonnets", block_size=64)
        plan = resolve("auto", model, world_size=1, global_batch=8, seq_len=64)
        calib = micro_run(model, data, rows=8, loss_spec="auto", device="cpu",
                          precision="32")
        result = skiff.Trainer(model, batch_size=8, lr=1e-3).train(data, steps=8)
        exp = expected(plan.estimate.to_json(), calib, n_params=result.num_parameters)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps(compare(exp, None, peak) | {"why_not": calib.why_not}))
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache == "cold":
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["why_not"] is None
    assert abs(got["memory_ratio"] - 1) <= 0.10, got


def test_time_steps_warms_up_then_takes_fewer_steps_for_a_slow_model():
    import time

    from skiff.kernels.train.plan.check import time_steps

    calls = []
    time_steps(lambda: calls.append(1), repeats=4)
    assert len(calls) == 5          # one warm-up, four timed
    slow = []
    time_steps(lambda: (slow.append(1), time.sleep(0.6 if len(slow) == 1 else 0)), repeats=4)
    assert len(slow) == 3           # a warm-up over half the budget: two timed

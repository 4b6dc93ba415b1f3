"""Round 31: the plan check of a 16-bit run had no micro-run ("the micro-run times float32
steps only"), so its expected peak was a baseline read before any step plus the formula's
gradients and 1.2x activations, and it had no expected step time. On 2 ranks under load,
``python -m skiff train gpt-mini --np 2 --precision bf16-mixed``: 300 MiB measured, 230
expected (1.30x, "off"); mlp 242 against 187 (1.30x): the code and kernels a first step
loads (~55 MiB) were missing. Now a bf16-mixed micro-run steps the copy as the run does
(16-bit weights, float32 masters) and the check agrees (gpt-mini 304 against 304). fp16 on
a CPU still has none (numpy's float16 matmul has no BLAS: 100x a bf16 step), saying why.
The oracle is the kernel's peak resident set of the process (``ru_maxrss``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]

CODE = textwrap.dedent("""
    import json, resource, sys
    import skiff
    from skiff.kernels.train.calibrate import micro_run
    from skiff.kernels.train.data import TextDataset
    from skiff.kernels.train.models import GPT, GPTConfig
    from skiff.kernels.train.plan import resolve
    from skiff.kernels.train.plan.check import compare, expected
    from skiff.kernels.train.precision import weight_bytes

    prec = sys.argv[1]
    skiff.seed(0)
    model = GPT(GPTConfig(block_size=64, n_layer=2, n_head=2, n_embd=64))
    data = TextDataset("sonnets", block_size=64)
    plan = resolve("auto", model, world_size=1, global_batch=8, seq_len=64)
    calib = micro_run(model, data, rows=8, loss_spec="auto", device="cpu", precision=prec)
    if calib.why_not is None:
        result = skiff.Trainer(model, batch_size=8, lr=1e-3, precision=prec).train(
            data, steps=6)
        exp = expected(plan.estimate.to_json(), calib, n_params=result.num_parameters,
                       weight_bytes=weight_bytes(prec))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        out = compare(exp, None, peak)
    else:
        out = {}
    print(json.dumps(out | {"why_not": calib.why_not, "local": calib.local_step_s,
                            "step_peak": calib.step_peak_bytes}))
""")


def _run(prec):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CODE, prec], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_bf16_run_is_calibrated_and_peaks_where_the_check_expects():
    got = _run("bf16-mixed")
    assert got["why_not"] is None and got["local"] > 0 and got["step_peak"] > 0
    assert abs(got["memory_ratio"] - 1) <= 0.10, got


def test_fp16_on_a_cpu_says_why_it_has_no_micro_run():
    # in this process (round 42 h17: a fresh interpreter for it was ~1.5 CPU s of imports;
    # no peak resident set is read on this path)
    import skiff
    from skiff.kernels.train.calibrate import micro_run
    from skiff.kernels.train.data import TextDataset
    from skiff.kernels.train.models import GPT, GPTConfig

    skiff.seed(0)
    model = GPT(GPTConfig(block_size=64, n_layer=2, n_head=2, n_embd=64))
    calib = micro_run(model, TextDataset("sonnets", block_size=64), rows=8, loss_spec="auto",
                      device="cpu", precision="fp16-mixed")
    assert "fp16-mixed on a CPU" in calib.why_not

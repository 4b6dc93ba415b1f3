"""Mixed precision in the Trainer: step time and peak memory of a small GPT at precision
``32``, ``bf16-mixed`` and ``fp16-mixed``, on one rank and on 2 MPI ranks (DP and ZeRO-2).

    .venv/bin/python benchmarks/bench_precision.py [--steps 6] [--quick]

Each configuration runs in its own process (the 2-rank ones under ``mpiexec -n 2``) with
``OPENBLAS_NUM_THREADS=1``: a warm-up run (imports, numba), then the measured run of
``--steps`` optimizer steps (median wall time per step after the first; CPU seconds per step
of this process), then the same run again under ``tracemalloc`` (numpy reports its buffers
to it) for the peak bytes held while training: weights, masters, gradients, AdamW state and
activations. Model: GPT-2 layout, 2 layers, width 64, 4 heads, context 64, vocabulary 256
(0.13 M parameters), batch 8 x 64 tokens of the shipped corpus, AdamW, clipping at 1.0.
The state column counts the arrays themselves: 16-bit weights, float32 masters (sharded
under ZeRO-2), AdamW moments. Written to ``benchmarks/results/precision.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRECISIONS = ("32", "bf16-mixed", "fp16-mixed")
CONFIGS = (("single", 1), ("dp", 2), ("zero2", 2))


def _trainer(kind: str, precision: str):
    import skiff
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.models.gpt import GPT, GPTConfig
    from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO

    class Ranks(NullReporter):
        world_size = 1 if kind == "single" else 2

    skiff.seed(0)
    model = GPT(GPTConfig(block_size=64, vocab_size=256, n_layer=2, n_head=4, n_embd=64))
    strategy = "single" if kind == "single" else DataParallel() if kind == "dp" else ZeRO(2)
    return skiff.Trainer(model, strategy=strategy, precision=precision, batch_size=8,
                         lr=1e-3, seed=0, reporter=Ranks())


def _state_bytes(trainer) -> int:
    """Bytes of this rank's weights, masters and optimizer state."""
    import numpy as np

    total = sum(p.data.nbytes for p in trainer.model.parameters())
    if trainer.mixed is not None and not trainer.mixed.owned:
        total += sum(m.data.nbytes for m in trainer.mixed.master)
    shard = getattr(trainer.strategy, "shard", None)
    if shard is not None:  # ZeRO's flat float32 slice (the masters under mixed precision)
        total += shard.data.nbytes
    for st in trainer.optimizer.state.values():
        total += sum(v.nbytes for v in st.values() if isinstance(v, np.ndarray))
    return int(total)


def worker(kind: str, precision: str, steps: int) -> None:
    import tracemalloc

    from skiff.kernels.train.data import TextDataset
    from skiff.kernels.train.parallel import world

    rank = world().rank if kind != "single" else 0
    data = TextDataset("classics", block_size=64)
    _trainer(kind, precision).train(data, steps=2)  # warm-up: imports, numba
    trainer = _trainer(kind, precision)
    c0 = time.process_time()
    result = trainer.train(data, steps=steps)
    cpu = (time.process_time() - c0) / steps
    tracemalloc.start()
    traced = _trainer(kind, precision)
    traced.train(data, steps=steps)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print("RESULT " + json.dumps({
        "rank": rank, "step_s": result.step_time_s, "cpu_s": cpu, "peak": peak,
        "state": _state_bytes(traced), "loss": result.final_loss}), flush=True)


def _run(kind: str, precision: str, steps: int) -> list[dict]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, __file__, "--worker", kind, precision, str(steps)]
    if kind != "single":
        cmd = [str(Path(sys.executable).parent / "mpiexec"), "-n", "2", *cmd]
    out = subprocess.run(["timeout", "-s", "KILL", "900", *cmd], capture_output=True,
                         text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} {precision} failed:\n{(out.stdout + out.stderr)[-3000:]}")
    dec, res, text = json.JSONDecoder(), [], out.stdout
    pos = text.find("RESULT ")
    while pos >= 0:
        obj, end = dec.raw_decode(text, pos + len("RESULT "))
        res.append(obj)
        pos = text.find("RESULT ", end)
    return res


def _load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--quick", action="store_true", help="3 steps")
    p.add_argument("--worker", nargs=3, metavar=("KIND", "PRECISION", "STEPS"))
    a = p.parse_args()
    if a.worker:
        worker(a.worker[0], a.worker[1], int(a.worker[2]))
        return
    steps = 3 if a.quick else a.steps
    load0 = _load()
    rows = []
    for kind, ranks in CONFIGS:
        base = None
        for prec in PRECISIONS:
            res = _run(kind, prec, steps)
            step = max(r["step_s"] for r in res)
            cpu = max(r["cpu_s"] for r in res)
            peak = max(r["peak"] for r in res)
            state = max(r["state"] for r in res)
            if base is None:
                base = (step, cpu, peak, state)
            rows.append((kind, ranks, prec, step, cpu, peak, state, base))
            print(f"{kind} x{ranks} {prec}: {step * 1e3:.0f} ms/step, {cpu * 1e3:.0f} CPU ms, "
                  f"peak {peak / 2**20:.2f} MiB, state {state / 2**20:.3f} MiB", flush=True)
    load1 = _load()
    lines = [
        "# Mixed precision in the Trainer (`benchmarks/bench_precision.py`)", "",
        f"Machine: 2 cores shared with other work (load average {load0:.1f} at the start, "
        f"{load1:.1f} at the end); one thread per rank; {steps} steps per run, median step "
        "after the first; peak = the `tracemalloc` peak of a whole training run (weights, "
        "masters, gradients, optimizer state, activations), the largest over the ranks. "
        f"Command: `.venv/bin/python benchmarks/bench_precision.py --steps {steps}`. "
        "Model: GPT, 2 layers, width 64, 4 heads, context 64, vocabulary 256 (0.13 M "
        "parameters), batch 8 x 64, AdamW.", "",
        "| strategy (ranks) | precision | step (ms, wall) | CPU ms / step | peak (MiB) | "
        "weights + masters + AdamW state (MiB) | peak / fp32 | state / fp32 |",
        "|---|---|---|---|---|---|---|---|"]
    for kind, ranks, prec, step, cpu, peak, state, base in rows:
        lines.append(f"| {kind} ({ranks}) | {prec} | {step * 1e3:.0f} | {cpu * 1e3:.0f} | "
                     f"{peak / 2**20:.2f} | {state / 2**20:.3f} | {peak / base[2]:.2f} | "
                     f"{state / base[3]:.2f} |")
    out = ROOT / "benchmarks" / "results" / "precision.md"
    notes = out.read_text().split("<!-- notes -->", 1)[1] if out.exists() and \
        "<!-- notes -->" in out.read_text() else ""
    out.write_text("\n".join(lines) + "\n\n<!-- notes -->" + notes.rstrip() + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()

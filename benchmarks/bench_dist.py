"""Distributed training benchmarks: DP efficiency, overlap, compression volume, planner error.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dist.py [--quick] [--out FILE]

Every measurement runs in its own ``mpiexec`` with one BLAS/numba thread per rank (so one
rank and two ranks get the same per-rank resources), and every figure is printed as a ratio
against its peer measured in the same run:

* DP efficiency at 2 ranks (weak scaling: each rank keeps the one-rank batch): the one-rank
  step time over the two-rank step time (1.0 = ideal).
* Overlap: two-rank step time with the bucketed all-reduce started from the gradient hooks
  against the same all-reduce run after backward.
* Bytes sent per rank per step by the gradient reduction with each compression, against none.
* Planner: predicted peak memory and step time against measured (tracemalloc peak of one
  training step plus the resident parameters/gradients/optimizer state; wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# --- the worker (runs under mpiexec) ----------------------------------------------------------
def _model(n_layer, n_embd, block):
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.models.gpt import GPT, GPTConfig

    train_random.seed(0)
    return GPT(GPTConfig(block_size=block, vocab_size=256, n_layer=n_layer, n_head=4,
                         n_embd=n_embd))


def _batch(step, b, t, rank=0):
    rng = np.random.default_rng([step, rank])
    x = rng.integers(0, 256, (b, t))
    return x, np.roll(x, -1, axis=1)


def worker(args) -> dict:
    from skiff.kernels.train.core.optim import AdamW
    from skiff.kernels.train.parallel import limit_threads, world
    from skiff.kernels.train.parallel.data_parallel import DataParallel
    from skiff.kernels.train.strategy import SingleDevice

    limit_threads(1)
    comm = world()
    model = _model(args.layers, args.width, args.block)
    if (comm.size == 1 and args.mode == "dp" and not args.compression) or args.mode == "solo":
        strat = SingleDevice()  # solo: every rank trains alone (the machine's own ceiling)
    else:
        strat = DataParallel(comm, bucket_mb=args.bucket_mb, overlap=args.overlap,
                             compression=args.compression)
    strat.bind(device="cpu")
    model, opt = strat.setup(model, lambda ps: AdamW(ps, lr=1e-3))
    times, sent = [], []
    import tracemalloc

    for step in range(args.steps):
        x, y = _batch(step, args.batch, args.block, comm.rank)
        comm.barrier()
        if step == args.steps - 1 and args.mode == "memory":
            tracemalloc.start()
        before = comm.bytes_sent
        t0 = time.perf_counter()
        strat.forward_backward(model, strat.to_device((x, y)), lambda m, b: m.loss(b))
        strat.reduce_gradients(model)
        strat.optimizer_step(opt)
        opt.zero_grad()
        times.append(time.perf_counter() - t0)
        sent.append(comm.bytes_sent - before)
    out = {"rank": comm.rank, "size": comm.size, "step_s": float(np.median(times[2:])),
           "bytes_per_step": float(np.median(sent[2:]))}
    red = getattr(strat, "reducer", None)
    if red is not None and red.bytes_early + red.bytes_late:
        out["early_fraction"] = red.bytes_early / (red.bytes_early + red.bytes_late)
    if args.mode == "memory":
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        resident = sum(p.data.nbytes for p in model.parameters())
        state = opt.state_dict()["state"]
        opt_bytes = sum(v.nbytes for s in state.values() for v in s.values()
                        if hasattr(v, "nbytes"))
        # parameters + optimizer state live before the step; the step's own peak on top
        out["measured_peak"] = int(resident + opt_bytes + peak)
        out["params"] = int(sum(p.size for p in model.parameters()))
    return out


# --- the driver ---------------------------------------------------------------------------------
def run(np_, *extra, timeout=600) -> list[dict]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               PYTHONPATH=str(ROOT))
    mpiexec = Path(sys.executable).parent / "mpiexec"
    cmd = [str(mpiexec), "-n", str(np_), sys.executable, __file__, "--worker", *map(str, extra)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode:
        raise RuntimeError(proc.stdout[-2000:] + proc.stderr[-2000:])
    dec, res, pos = json.JSONDecoder(), [], proc.stdout.find("RESULT ")
    while pos >= 0:
        obj, end = dec.raw_decode(proc.stdout, pos + 7)
        res.append(obj)
        pos = proc.stdout.find("RESULT ", end)
    return sorted(res, key=lambda r: r["rank"])


def best(np_, *extra, repeats=3) -> list[dict]:
    """``run`` repeated; each rank's fastest step kept (the machine is shared: the minimum
    is the least disturbed measurement)."""
    runs = [run(np_, *extra) for _ in range(repeats)]
    out = runs[0]
    for other in runs[1:]:
        for a, b in zip(out, other):
            if b["step_s"] < a["step_s"]:
                a["step_s"] = b["step_s"]
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--worker", action="store_true")
    p.add_argument("--mode", default="dp")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--bucket-mb", type=float, default=0.25)
    p.add_argument("--overlap", type=int, default=1)
    p.add_argument("--compression", default="")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dist.md"))
    args = p.parse_args()
    if args.worker:
        args.overlap = bool(args.overlap)
        args.compression = args.compression or None
        print("RESULT " + json.dumps(worker(args)), flush=True)
        return
    steps = "6" if args.quick else "10"
    common = ["--steps", steps, "--layers", "2", "--width", "128", "--block", "64",
              "--batch", "8"]
    lines = ["# Distributed training benchmarks", "",
             f"Measured {time.strftime('%Y-%m-%d')} on this machine ({os.cpu_count()} cores, "
             "CPU only), one BLAS thread per rank; GPT with 2 layers, width 128, 64 tokens, "
             "8 sequences per rank per step; the median step after two warm-up steps, best of "
             "2-3 interleaved runs (the "
             f"2 cores are shared with other work; load average at the start "
             f"{os.getloadavg()[0]:.1f}).", "",
             "Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dist.py`", ""]

    k = 2 if args.quick else 3
    one, two, sync = [run(1, *common)[0]], run(2, *common, "--overlap", "1"), \
        run(2, *common, "--overlap", "0")
    solo = run(2, *common, "--mode", "solo")
    for _ in range(k - 1):  # interleaved repeats: each configuration sees the same load
        one.append(run(1, *common)[0])
        for mine, again in ((two, run(2, *common, "--overlap", "1")),
                            (sync, run(2, *common, "--overlap", "0")),
                            (solo, run(2, *common, "--mode", "solo"))):
            for a, b in zip(mine, again):
                a["step_s"] = min(a["step_s"], b["step_s"])
    one = min(one, key=lambda r: r["step_s"])
    t1, t2 = one["step_s"], max(r["step_s"] for r in two)
    ts = max(r["step_s"] for r in sync)
    t0 = max(r["step_s"] for r in solo)
    lines += ["## Data parallel", "",
              "| measurement | value | ratio |", "|---|---|---|",
              f"| 1 rank step | {t1 * 1e3:.1f} ms | 1.00 |",
              f"| 2 ranks step (weak scaling, overlap on) | {t2 * 1e3:.1f} ms | "
              f"efficiency {t1 / t2:.2f} |",
              f"| 2 ranks step, all-reduce after backward | {ts * 1e3:.1f} ms | "
              f"efficiency {t1 / ts:.2f} |",
              f"| 2 ranks training alone at once (no communication: the machine's own "
              f"2-process ceiling, shared memory bandwidth and caches) | {t0 * 1e3:.1f} ms | "
              f"efficiency {t1 / t0:.2f} |",
              f"| DP against that ceiling (the cost of communication itself) | | "
              f"{t0 / t2:.2f} |",
              f"| overlap on vs off | | {ts / t2:.2f}x faster with overlap |",
              "",
              "How to read it: two processes training *without* any communication already run "
              "at the ceiling's efficiency (this VM's two vCPUs do not give twice one core's "
              "speed; measured 1 process alone against 2 at once). Data parallel is then "
              "judged against that ceiling: what is lost beyond it is synchronisation (each "
              "step waits for the slower rank) and the all-reduce itself (0.5 ms for these "
              "1.9 MB by a bare mpi4py Allreduce on this machine). Overlap cannot pay off with "
              "no spare core for MPI to progress on.",
              f"| gradient bytes whose all-reduce started during backward | "
              f"{two[0].get('early_fraction', 0):.0%} (overlap on) | "
              f"{sync[0].get('early_fraction', 0):.0%} (overlap off) |", ""]
    print(*lines[-13:], sep="\n")

    rows = ["## Bytes sent per rank per step (gradient reduction, 2 ranks)", "",
            "| compression | bytes/step | vs none |", "|---|---|---|"]
    base = None
    for spec in ("", "fp16", "bf16", "topk:ratio=0.01", "powersgd:rank=4"):
        extra = [*common, "--overlap", "0", "--steps", "4"]
        if spec:
            extra += ["--compression", spec]
        r = run(2, *extra)[0]
        base = base or r["bytes_per_step"]
        rows.append(f"| {spec or 'none'} | {r['bytes_per_step']:,.0f} | "
                    f"{r['bytes_per_step'] / base:.3f} |")
    lines += rows + [""]
    print(*rows, sep="\n")

    from dataclasses import replace

    from skiff.kernels.train.plan import Choice, ClusterSpec, ModelSpec, estimate, measure_flops

    spec = ModelSpec("bench-gpt", n_layers=2, d_model=128, n_heads=4, vocab=256, seq_len=64)
    flops = measure_flops()
    peak_cl = ClusterSpec(devices=1, memory=10**10, flops=flops, mem_bw=10e9, kind="cpu")
    # calibrate on steps of 2 and 4 sequences (a fixed cost plus a cost per sequence, for
    # time and for memory), then predict 8 sequences on 1 rank and 2 x 8 on 2 ranks
    m2 = best(1, "--mode", "memory", *common[:-1], "2", repeats=k)[0]
    m4 = best(1, "--mode", "memory", *common[:-1], "4", repeats=k)[0]
    big = best(1, "--mode", "memory", *common, repeats=k)[0]
    e2, e4 = (estimate(spec, peak_cl, Choice(micro_batch=b), global_batch=b, weight_bytes=4)
              for b in (2, 4))
    per_seq_t = (m4["step_s"] - m2["step_s"]) / 2
    eff = flops * (e4.time["compute"] - e2.time["compute"]) / 2 / per_seq_t
    overhead_t = m4["step_s"] - 4 * per_seq_t
    scale = (m4["measured_peak"] - m2["measured_peak"]) / (
        e4.memory["activations"] - e2.memory["activations"])
    overhead_m = int(m4["measured_peak"] - e4.peak_memory - e4.memory["activations"] * (scale - 1))
    cal = replace(peak_cl, flops=eff, act_scale=scale, step_overhead=max(0.0, overhead_t),
                  mem_overhead=max(0, overhead_m))
    rows = ["## Planner: predicted vs measured (fp32, AdamW)", "",
            "Stated: the cost model with the measured float32 matmul peak "
            f"({flops / 1e9:.1f} GFLOP/s) and fused-kernel activations. Calibrated: "
            f"throughput ({eff / 1e9:.2f} GFLOP/s effective) and activation overhead "
            f"(x{scale:.2f}), fixed cost per step ({max(0.0, overhead_t) * 1e3:.1f} ms, "
            f"{max(0, overhead_m) / 2**20:.1f} MiB) fitted on steps of 2 and 4 sequences, then "
            "used to predict other runs.", "",
            "| run | quantity | stated | calibrated | measured | calibrated / measured |",
            "|---|---|---|---|---|---|"]
    for label, gb, np_, meas_t, meas_m in (
            ("1 rank, 8 seq", 8, 1, big["step_s"], big["measured_peak"]),
            ("2 ranks, 2 x 8 seq", 16, 2, t2, None)):
        c = Choice(dp=np_, micro_batch=8)
        st = estimate(spec, replace(peak_cl, devices=np_), c, global_batch=gb, weight_bytes=4)
        ca = estimate(spec, replace(cal, devices=np_, intra_bw=2e9), c, global_batch=gb,
                      weight_bytes=4)
        rows.append(f"| {label} | step time | {st.step_time * 1e3:.1f} ms | "
                    f"{ca.step_time * 1e3:.1f} ms | {meas_t * 1e3:.1f} ms | "
                    f"{ca.step_time / meas_t:.2f} |")
        if meas_m:
            rows.append(f"| {label} | peak memory | {st.peak_memory / 2**20:.1f} MiB | "
                        f"{ca.peak_memory / 2**20:.1f} MiB | {meas_m / 2**20:.1f} MiB | "
                        f"{ca.peak_memory / meas_m:.2f} |")
    lines += rows + [""]
    print(*rows, sep="\n")
    lines += ["## Reading these figures", "",
              "* Two ranks on two cores leave no core free: MPI moves a non-blocking all-reduce "
              "only inside MPI calls (the gradient hooks poke it), so on this machine overlap "
              "gains little or loses; the hooks' benefit needs a spare core or a NIC/NCCL "
              "engine that progresses on its own.",
              "* The machine is shared with other work while this runs (see the load average "
              "above): step times of 2 ranks suffer most, and the two-point time calibration "
              "is only as good as its two measurements. Memory is not affected by load.",
              "* Byte counts are exact (counted by the communicator) and do not depend on load.",
              ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

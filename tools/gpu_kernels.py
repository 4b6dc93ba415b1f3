"""The GPU kernels of skiff's gpt-mini training step, as the device ran them: PyTorch's profiler
(CUPTI) records every kernel launched in the process, cupy's included. Prints the kernels by
total device time, their count per step, and the step's wall time against the sum of kernel
time (far apart: the host's launches are the bottleneck). Used by tools/gpu-profile.sh."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def main(steps: int = 5) -> None:
    import bench_train as bt
    import torch
    from torch.profiler import ProfilerActivity, profile

    from skiff.kernels.train import models
    from skiff.kernels.train.core import optim
    from skiff.kernels.train.core import random as train_random
    from skiff.kernels.train.strategy import SingleDevice

    gpu = torch.cuda.is_available()
    train_random.seed(0)
    strategy = SingleDevice().bind(device="cuda" if gpu else "cpu")
    model, opt = strategy.setup(models.get("gpt-mini"), lambda ps: optim.AdamW(ps, lr=1e-3))
    x, y = strategy.to_device(bt._batch())

    step = bt.skiff_step(model, opt, x, y)
    for _ in range(3):
        step()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    with profile(activities=acts) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        wall = (time.perf_counter() - t0) / steps
    events = [e for e in prof.events() if gpu and e.device_type.name == "CUDA"]
    total = sum(_us(e) for e in events) / steps / 1e3  # ms per step
    print(f"wall {wall * 1e3:.2f} ms/step; kernels {len(events) / steps:.0f} per step, "
          f"{total:.2f} ms of device time per step")
    by = {}
    for e in events:
        n, t = by.get(e.name, (0, 0.0))
        by[e.name] = (n + 1, t + _us(e))
    for name, (n, t) in sorted(by.items(), key=lambda kv: -kv[1][1])[:40]:
        print(f"{t / steps / 1e3:8.3f} ms  {n / steps:6.1f}x  {name[:110]}")


def _us(event) -> float:
    """A kernel's duration in microseconds (its time range as the device recorded it)."""
    return float(event.time_range.end - event.time_range.start)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)

#!/usr/bin/env python
"""Parallel efficiency of skiff.aero.sweep on this machine: the same 64 shapes (the benchmark's
box, Re 200, graded grids at resolution 21) solved by 2 and by 1 worker processes.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_aero_sweep_efficiency.py
"""
import json
import os
import time

from skiff.kernels.aero import sweep

if __name__ == "__main__":
    box = dict(length=(2.0, 5.0), bluntness=(0.0, 1.0), clearance=(0.15, 0.3))
    out = {}
    for np_ in (2, 1):
        t0 = time.perf_counter()
        s = sweep(64, **box, re=200.0, adapt="graded", resolution=21, np=np_, seed=0)
        out[np_] = {"wall": time.perf_counter() - t0, "serial": float(s.seconds.sum()),
                    "failed": len(s.failed), "load": os.getloadavg()[0],
                    "cd0": float(s.cd[0]) if hasattr(s, "cd") else None}
        print(np_, json.dumps(out[np_]), flush=True)
    print("speed-up", out[1]["wall"] / out[2]["wall"])

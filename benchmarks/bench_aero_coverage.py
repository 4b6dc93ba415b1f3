#!/usr/bin/env python
"""Is the surrogate's 95% bound honest? Fits on the stored 64-shape sweep (Re 200, graded
grids at resolution 21; each seed its own calibration split) checked against the 20 fresh
held-out solves it never saw (``results/aero-sweep.json``, ``results/aero-heldout.json``).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_aero_coverage.py [seeds]

Round 29 (load 10): 153/160 inside (95.6%), median half-width 0.14-0.33%, max error
0.16-0.40% over seeds 0-7.
"""
import json
import sys
from pathlib import Path

import numpy as np

from skiff.kernels.aero import PARAMS, Samples, Surrogate

HERE = Path(__file__).resolve().parent / "results"


def load(name) -> Samples:
    d = json.loads((HERE / name).read_text())
    return Samples(np.array(d["params"]), np.array(d["cd"]), np.array(d["cl"]),
                   np.array(d["cells"]), np.array(d["seconds"]), d["domain"], d["re"],
                   d["adapt"], d["resolution"])


if __name__ == "__main__":
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    sweep, held = load("aero-sweep.json"), load("aero-heldout.json")
    inside_all = 0
    for seed in range(seeds):
        model = Surrogate.fit(sweep, seed=seed)
        pred = model.predict([dict(zip(PARAMS, row)) for row in held.params])
        inside = sum(p.lo <= c <= p.hi for p, c in zip(pred, held.cd))
        half = np.median([(p.hi - p.lo) / 2 / p.cd for p in pred])
        err = max(abs(p.cd - c) / c for p, c in zip(pred, held.cd))
        inside_all += inside
        print(f"seed {seed}: {inside}/{len(held)} inside, median half-width {100 * half:.2f}%,"
              f" max error {100 * err:.2f}%", flush=True)
    print(f"coverage {inside_all}/{seeds * len(held)} = {inside_all / (seeds * len(held)):.3f}")

"""A Reynolds sweep of one nose: separate solves from rest against ``reynolds_sweep`` (each
Newton starting from the flow before), on the same grids, alternating, in one process.

    python benchmarks/bench_aero_resweep.py [--res 300 1000 3000] [--resolution 25]

Prints per Re: cd of both (they must agree to Newton's tolerance), Newton steps, seconds,
and the load average (timings on a shared machine are noisy; steps are not).
"""

from __future__ import annotations

import argparse
import json
import os
import time

for _k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_k, "1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--res", type=float, nargs="+", default=[300.0, 1000.0, 3000.0])
    ap.add_argument("--resolution", type=float, default=25.0)
    ap.add_argument("--shape", type=float, nargs=3, default=[3.0, 0.4, 0.15])
    args = ap.parse_args()
    from skiff.kernels.aero import reynolds_sweep, solve_nose

    length, bluntness, clearance = args.shape
    t0 = time.perf_counter()
    sweep = reynolds_sweep(args.res, length, bluntness, clearance, adapt="graded",
                           resolution=args.resolution, mode="steady")
    t_sweep = time.perf_counter() - t0
    t0 = time.perf_counter()
    alone = [solve_nose(length, bluntness, clearance, re=r, adapt="graded",
                        resolution=args.resolution, mode="steady", keep=False)
             for r in args.res]
    t_alone = time.perf_counter() - t0
    for a, b in zip(alone, sweep):
        print(json.dumps({"re": a.re, "cd_alone": a.cd, "cd_sweep": b.cd,
                          "rel_diff": abs(b.cd / a.cd - 1), "cells": a.cells,
                          "newton_alone": a.newton_steps, "newton_sweep": b.newton_steps}))
    print(json.dumps({"seconds_alone": round(t_alone, 1), "seconds_sweep": round(t_sweep, 1),
                      "newton_alone": sum(a.newton_steps for a in alone),
                      "newton_sweep": sum(b.newton_steps for b in sweep),
                      "loadavg": open("/proc/loadavg").read().split()[:3]}))


if __name__ == "__main__":
    main()

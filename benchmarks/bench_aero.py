"""The train nose (issue 12, items 3–5): grids at equal drag accuracy, the sweep, the surrogate.

    python benchmarks/bench_aero.py compare [--re 1000]       # held-out shapes, 4 grids
    python benchmarks/bench_aero.py sweep [--n 64] [--held 20] [--np 2] [--re 200]
    python benchmarks/bench_aero.py surrogate                  # fit, coverage, design, check

``compare``: for each held-out shape a grid-converged reference (graded field, resolution
100), then uniform (the coarsest that holds the body, and finer), graded, estimator (its
loop timed whole) and learned (network + mesh + one solve): cells, drag error, seconds.
``sweep``: ``n`` shapes (seed 0) and ``held`` held-out shapes (seed 1) as parallel processes,
saved to ``results/aero-sweep.json`` and ``results/aero-heldout.json`` (the notebook's quick
mode reads them). ``surrogate``: the surrogate fitted on the sweep, checked on the held-out
solves; the design loop and one verifying solve. Each writes JSON lines to
``results/aero-*.jsonl``; ``results/aero.md`` is written from them by hand-checked tables
(``--write``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

for _k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"


def _line(name, row):
    with open(OUT / f"aero-{name}.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)


def compare(args):
    from skiff.kernels.aero import HELD_OUT_SHAPES, solve_nose
    from skiff.kernels.solve.flow.adapt import min_resolution

    for shape in HELD_OUT_SHAPES[: args.shapes]:
        p = shape.to_dict()
        if args.ref is not None:
            ref_cd = args.ref
        else:
            ref = solve_nose(**p, re=args.re, adapt="graded", resolution=100, keep=False)
            ref_cd = ref.cd
            _line("compare", {"shape": p, "adapt": "reference (graded 100)",
                              "cells": ref.cells, "cd": ref.cd, "seconds": ref.seconds})
        runs = [("learned", None), ("estimator", None), ("graded", None)] + \
            [("uniform", r) for r in args.uniform]
        for adapt, res in runs:
            if adapt == "uniform" and res is None:
                res = 1.05 * min_resolution(shape, "uniform")
            t0 = time.perf_counter()
            flow = solve_nose(**p, re=args.re, adapt=adapt, resolution=res, keep=False)
            _line("compare", {"shape": p, "adapt": adapt, "resolution": res,
                              "cells": flow.cells, "cd": flow.cd,
                              "error": (flow.cd - ref_cd) / ref_cd,
                              "seconds": time.perf_counter() - t0,
                              "details": flow.details})


def sweep(args):
    from skiff.kernels.aero import sweep as run_sweep

    box = dict(length=(2.0, 5.0), bluntness=(0.0, 1.0), clearance=(0.15, 0.3))
    for name, n, seed in (("sweep", args.n, 0), ("heldout", args.held, 1)):
        s = run_sweep(n, **box, re=args.re, adapt="graded", resolution=21, np=args.np,
                      seed=seed, progress=lambda d, t, r: print(d, t, r, flush=True))
        s.save(OUT / f"aero-{name}.json")
        _line("sweep", {"name": name, "n": len(s), "wall_seconds": s.wall_seconds,
                        "serial_seconds": float(s.seconds.sum()), "workers": s.workers,
                        "failed": len(s.failed), "load": os.getloadavg()})


def surrogate(args):
    import numpy as np

    from skiff.kernels.aero import PARAMS, Samples, Surrogate, design, solve_nose

    samples = Samples.load(OUT / "aero-sweep.json")
    held = Samples.load(OUT / "aero-heldout.json")
    t0 = time.perf_counter()
    model = Surrogate.fit(samples, members=5, steps=600)
    fit_s = time.perf_counter() - t0
    preds = model.predict([dict(zip(PARAMS, r)) for r in held.params])
    cd = np.array([p.cd for p in preds])
    err = np.abs(cd - held.cd) / held.cd
    cover = float(np.mean([t in p for t, p in zip(held.cd, preds)]))
    q = dict(zip(PARAMS, held.params[0]))
    t1 = time.perf_counter()
    for _ in range(200):
        model.predict(q)
    query = (time.perf_counter() - t1) / 200
    best = design(model, volume=2.5)
    check = solve_nose(**best["params"], re=samples.re, adapt=samples.adapt,
                       resolution=samples.resolution, keep=False)
    _line("surrogate", {"fit_seconds": fit_s, "max_error": float(err.max()),
                        "mean_error": float(err.mean()), "coverage": cover,
                        "held_out": len(held), "query_ms": 1e3 * query,
                        "design": best, "design_check_cd": check.cd,
                        "design_check_inside": bool(best["lo"] <= check.cd <= best["hi"]),
                        "design_check_seconds": check.seconds, "record": model.record,
                        "load": os.getloadavg()})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--re", type=float, default=1000.0)
    c.add_argument("--shapes", type=int, default=1)
    c.add_argument("--ref", type=float, default=None,
                   help="the grid-converged cd when known (skips the reference solve)")
    c.add_argument("--uniform", type=float, nargs="*", default=[None])
    s = sub.add_parser("sweep")
    s.add_argument("--n", type=int, default=64)
    s.add_argument("--held", type=int, default=20)
    s.add_argument("--np", type=int, default=2)
    s.add_argument("--re", type=float, default=200.0)
    sub.add_parser("surrogate")
    args = ap.parse_args(argv)
    {"compare": compare, "sweep": sweep, "surrogate": surrogate}[args.what](args)


if __name__ == "__main__":
    main()

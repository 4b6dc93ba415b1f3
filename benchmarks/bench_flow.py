"""The flow solver on the DFG benchmark "flow around a cylinder" (Schäfer & Turek 1996).

    python benchmarks/bench_flow.py [--steady 32,64,128,192] [--periodic 96] [--dt 0.0025]
                                    [--t-end 5] [--skip-periodic]

1. 2D-1 (steady, Re 20) at several resolutions (edges around the cylinder): cd, cl, dp against
   the published bands, cells, unknowns, Newton steps, seconds and the share in linear solves.
2. 2D-2 (periodic, Re 100): cd_max, cl_max, Strouhal number over the last second of
   simulated time, time steps, seconds; the linear solves per kind (momentum BiCGStab, pressure
   CG + AMG set up once, mass CG) with their iterations per step, and the pressure solve of a
   step against one Poisson solve of the same matrix set up from scratch.

Each case runs in its own process with one thread (OPENBLAS/OMP/NUMBA = 1). Writes
``benchmarks/results/flow.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
       "MKL_NUM_THREADS": "1"}
for _k, _v in ENV.items():
    os.environ.setdefault(_k, _v)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "flow.md"


def _one(args) -> dict:
    """One case in this process (the child side)."""
    from skiff.kernels.solve.flow import run_case

    res = run_case(args.case, resolution=args.resolution, dt=args.dt, t_end=args.t_end,
                   keep_fields=False, device=args.device)
    out = res.to_json()
    if res.history:
        out["pressure_vs_poisson"] = _pressure_vs_poisson(args.resolution, out)
    return out


def _pressure_vs_poisson(resolution, out) -> dict:
    """One pressure solve of a time step (setup reused) against one Poisson solve of the
    same P1 matrix with its own setup (AMG + CG to the same tolerance)."""
    import numpy as np

    from skiff.kernels.solve import Solver
    from skiff.kernels.solve.flow import CASES, TaylorHood, channel_mesh

    th = TaylorHood(channel_mesh(resolution, wake=CASES["2d-2"].wake))
    keep = np.ones(th.np, dtype=bool)
    keep[th.pressure_dofs("outlet")] = False
    A = th.Kp[keep][:, keep]
    b = A @ np.random.default_rng(0).standard_normal(A.shape[0])
    t0 = time.perf_counter()
    sol = Solver(A, method="cg", precond="amg").solve(b, rtol=1e-8)
    fresh = time.perf_counter() - t0
    per_step = out["solve_seconds"]["pressure"] / out["steps"]
    return {"per_step_s": per_step, "fresh_poisson_s": fresh,
            "fresh_iterations": sol.iterations, "ratio": per_step / fresh}


def _spawn(case, resolution, dt=None, t_end=None) -> dict:
    cmd = [sys.executable, __file__, "--child", case, "--resolution", str(resolution)]
    if dt is not None:
        cmd += ["--dt", str(dt)]
    if t_end is not None:
        cmd += ["--t-end", str(t_end)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                         env={**os.environ, **ENV, "PYTHONPATH": str(ROOT)})
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _band(doc, key):
    if doc.get(key) is None:
        return "n/a"
    mark = "in" if doc["in_bands"][key] else "out"
    return f"{doc[key]:.5g} ({mark})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steady", default="32,64,128,192")
    ap.add_argument("--periodic", type=int, default=96)
    ap.add_argument("--dt", type=float, default=0.0025)
    ap.add_argument("--t-end", type=float, default=5.0)
    ap.add_argument("--skip-periodic", action="store_true")
    ap.add_argument("--child", default=None)
    ap.add_argument("--case", default=None)
    ap.add_argument("--resolution", type=int, default=None)
    ap.add_argument("--device", default="cpu",
                    help="where an unsteady case's linear solves run (the GPU rows: cuda)")
    args = ap.parse_args(argv)
    if args.child:
        args.case = args.child
        print(json.dumps(_one(args)))
        return 0
    load = os.getloadavg()
    lines = [f"`python benchmarks/bench_flow.py --steady {args.steady} --periodic "
             f"{args.periodic} --dt {args.dt} --t-end {args.t_end}` "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; 2 cores shared with "
             f"other engineers' work, load average {load[0]:.1f} / {load[1]:.1f} / "
             f"{load[2]:.1f} at the start: absolute seconds are inflated)", "",
             "Taylor-Hood P2/P1 on a gmsh mesh (the cylinder a polygon of N edges, vertices on "
             "the circle), scikit-fem assembly, skiff's Solver for every linear solve.", "",
             "### 2D-1 (steady, Re 20): bands cd 5.57-5.59, cl 0.0104-0.0110, "
             "dp 0.1172-0.1176, la 0.0842-0.0852", "",
             "| N | cells | unknowns | cd | cl | dp | la | Newton steps | seconds | "
             "linear share |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n in (int(v) for v in args.steady.split(",")):
        d = _spawn("2d-1", n)
        lines.append(f"| {n} | {d['cells']} | {d['dofs']} | {_band(d, 'cd')} | "
                     f"{_band(d, 'cl')} | {_band(d, 'dp')} | {_band(d, 'la')} | {d['steps']} | "
                     f"{d['seconds']:.1f} | {100 * d['linear_share']:.0f}% |")
        print(lines[-1], flush=True)
    if not args.skip_periodic:
        d = _spawn("2d-2", args.periodic, args.dt, args.t_end)
        lines += ["", "### 2D-2 (periodic, Re 100): bands cd_max 3.22-3.24, cl_max 0.99-1.01, "
                  "St 0.295-0.305, dp (half a period after max lift) 2.46-2.50", "",
                  "| N | cells | unknowns | dt | t_end | steps | cd_max | cl_max | St | dp | "
                  "seconds | linear share |", "|---|---|---|---|---|---|---|---|---|---|---|---|",
                  f"| {args.periodic} | {d['cells']} | {d['dofs']} | {d['dt']} | "
                  f"{d['t_end']:.2f} | {d['steps']} | {_band(d, 'cd_max')} | "
                  f"{_band(d, 'cl_max')} | {_band(d, 'st')} | {_band(d, 'dp_half')} | "
                  f"{d['seconds']:.1f} | "
                  f"{100 * d['linear_share']:.0f}% |", "",
                  "Per kind of work over the run (seconds; iterations per step):", "",
                  "| momentum (BiCGStab+Jacobi, 2 per step) | pressure (CG+AMG, set up once) | "
                  "mass (CG+Jacobi, 2 per step) | convection assembly |",
                  "|---|---|---|---|",
                  f"| {d['solve_seconds']['momentum']:.1f} s; "
                  f"{d['iterations_per_step']['momentum']} it | "
                  f"{d['solve_seconds']['pressure']:.1f} s; "
                  f"{d['iterations_per_step']['pressure']} it | "
                  f"{d['solve_seconds']['mass']:.1f} s; {d['iterations_per_step']['mass']} it | "
                  f"{d['solve_seconds']['assembly']:.1f} s |"]
        pv = d["pressure_vs_poisson"]
        lines += ["", f"Pressure solve of one step {1e3 * pv['per_step_s']:.1f} ms (setup "
                  f"reused, warm start) vs one Poisson solve of the same matrix with its own "
                  f"AMG setup {1e3 * pv['fresh_poisson_s']:.1f} ms ({pv['fresh_iterations']} "
                  f"CG iterations): ratio {pv['ratio']:.2f}."]
        print("\n".join(lines[-14:]), flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

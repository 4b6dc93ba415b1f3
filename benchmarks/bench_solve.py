"""Solver speed against its peers, each method in its own process.

    python benchmarks/bench_solve.py [--n 1024] [--n3 64] [--repeat 3] [--skip-direct]

Every case runs in a fresh process with OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1 and
NUMBA_NUM_THREADS=1 (equal for skiff and its peers). numba kernels are compiled (and cached on
disk) by a warm-up solve on a small grid before anything is timed, so the figures EXCLUDE numba
compile time; the first-ever call in a fresh environment pays it once (see results).

Figures:
1. 2D Poisson n x n (cell-centred, Dirichlet), setup + solve to |r|/|b| <= 1e-8: skiff's
   stationary V(2,2) multigrid, skiff CG + multigrid, the same multigrid with the numba twins
   switched off (SKIFF_REFERENCE_OPS=1: a plain numpy geometric multigrid), pyamg Ruge-Stuben
   and smoothed aggregation (setup + solve; every pyamg solve here is CG-accelerated,
   ``accel="cg"``, as pyamg's documentation runs SPD problems), and SciPy's sparse direct
   solver (SuperLU).
2. Full multigrid to discretisation error (one F... one V-cycle per level).
3. Fused kernel bandwidth against a STREAM-like triad (numba, same array size, same run).
4. AMG on a 3D variable-coefficient problem (n3^3): skiff smoothed aggregation vs pyamg's,
   setup and CG-accelerated solve.
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
RESULTS = ROOT / "benchmarks" / "results" / "solve.md"


CPU_TIMES: list[float] = []  # the best CPU time of each _best call, in order


def _best(fn, repeat, budget=2.0, most=25):
    """Best time of at least ``repeat`` runs, more (up to ``most``) while they fit ``budget``
    seconds: on a shared machine the minimum is the figure least disturbed by others. The
    best CPU time (this one-thread process's, not counting waits for a core) goes to
    ``CPU_TIMES``: a fast method gets more runs within the budget, so on a loaded machine
    its best wall time is luckier than a slow method's, and CPU time is the fairer ratio."""
    times, cpu, out = [], [], None
    while len(times) < repeat or (sum(times) < budget and len(times) < most):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU_TIMES.append(min(cpu))
    return min(times), out


# ----------------------------------------------------------------------------- cases
def case_skiff(n, repeat, method):
    from skiff.kernels.solve import Solver, poisson

    Solver(poisson((64, 64)), method=method, precond="mg").solve(rtol=1e-8)    # warm-up
    if method == "fmg":
        from skiff.kernels.solve.multigrid import GeometricMG

        p0 = poisson((64, 64))
        GeometricMG(p0.stencil, p0.signs).fmg(p0.source, p0.bterm)
    p = poisson((n, n))

    def run():
        s = Solver(p, method=method, precond="mg")
        return s.solve(rtol=1e-8)

    t, sol = _best(run, repeat)
    assert sol.converged
    return {"time": t, "iterations": sol.iterations, "relres": sol.relative_residual,
            "setup": sol.setup_time, "solve": sol.time, "bandwidth": sol.bandwidth,
            "error": sol.error}


def case_fmg(n, repeat):
    """Full multigrid with one V(1,1) cycle per level, from the coarsest grid up."""
    import numpy as np

    from skiff.kernels.solve import poisson, solve
    from skiff.kernels.solve.multigrid import GeometricMG

    p0 = poisson((64, 64))
    GeometricMG(p0.stencil, p0.signs).fmg(p0.source, p0.bterm)
    p = poisson((n, n))

    def run():
        mg = GeometricMG(p.stencil, p.signs, pre=1, post=1)
        return mg.fmg(p.source, p.bterm)

    t, u = _best(run, repeat)
    err = float(np.abs(u.reshape(p.shape) - p.exact).max())
    disc = float(solve(p, method="mg", rtol=1e-11).error)
    return {"time": t, "error": err, "discretisation_error": disc}


def case_pyamg(n, repeat, kind):
    import numpy as np
    import pyamg

    from skiff.kernels.solve import poisson

    p = poisson((n, n))
    A, b = p.matrix(), p.rhs.ravel()

    def run():  # as a user would run it: AMG as CG's preconditioner (accel="cg")
        ml = (pyamg.ruge_stuben_solver(A) if kind == "rs"
              else pyamg.smoothed_aggregation_solver(A))
        res = []
        x = ml.solve(b, tol=1e-8, residuals=res, maxiter=200, accel="cg")
        return x, res

    t, (x, res) = _best(run, repeat)
    rel = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
    return {"time": t, "iterations": len(res) - 1, "relres": rel}


def case_direct(n):
    import numpy as np
    import scipy.sparse.linalg as spla

    from skiff.kernels.solve import poisson

    p = poisson((n, n))
    A, b = p.matrix().tocsc(), p.rhs.ravel()
    t0 = time.perf_counter()
    x = spla.spsolve(A, b)
    t = time.perf_counter() - t0
    return {"time": t, "relres": float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))}


def case_kernels(n, repeat):
    """Every fused kernel at n x n (fits the last-level cache here) and at 4n x 4n (DRAM)."""
    return {f"{m}x{m}": _kernels_at(m, repeat) for m in (n, 4 * n)}


def _kernels_at(n, repeat):
    import numpy as np
    from numba import njit

    from skiff.kernels.solve import fused, grid_problem, poisson

    @njit(cache=True)
    def triad(a, b, c, s):
        af, bf, cf = a.ravel(), b.ravel(), c.ravel()
        for i in range(af.size):
            af[i] = bf[i] + s * cf[i]

    rng = np.random.default_rng(0)
    shape = (1, n, n)
    u, f, out = rng.standard_normal(shape), rng.standard_normal(shape), np.empty(shape)
    coarse = np.zeros((1, n // 2, n // 2))
    cst = poisson((n, n)).stencil
    var = grid_problem((n, n), k=rng.uniform(1, 2, (n, n))).stencil
    x, r, pp, q = (rng.standard_normal(n * n) for _ in range(4))
    signs = -np.ones(6)
    cells = n * n
    cases = {
        "triad (a = b + s c)": (lambda: triad(out, u, f, 0.5), 24),
        "apply_const (A u, u.Au)": (lambda: fused.apply_const(u, *cst.arrays(), out), 16),
        "apply_var (A u, u.Au)": (lambda: fused.apply_var(u, *var.arrays(), out), 40),
        "rbgs_const (1 sweep)": (lambda: fused.rbgs_const(u, f, *cst.arrays(), 1, False), 24),
        "rbgs_var (1 sweep)": (lambda: fused.rbgs_var(u, f, *var.arrays(), 1, False), 48),
        "residual_restrict_const": (
            lambda: fused.residual_restrict_const(u, f, *cst.arrays(), coarse), 18),
        "prolong_add": (lambda: fused.prolong_add(u, coarse, signs), 18),
        "axpy_norm": (lambda: fused.axpy_norm(x, r, pp, q, 1e-9), 48),
    }
    rows = {}
    for name, (fn, bytes_per_cell) in cases.items():
        fn()
        t, _ = _best(fn, max(repeat, 10))
        rows[name] = {"time": t, "GBps": bytes_per_cell * cells / t / 1e9}
    return rows


def _aniso_problem(n3):
    import numpy as np

    from skiff.kernels.solve import grid_problem

    rng = np.random.default_rng(7)
    # log-normal coefficient blocks of 4^3 cells (contrast ~ 100)
    blocks = np.exp(rng.normal(0.0, 1.2, (n3 // 4,) * 3))
    k = np.kron(blocks, np.ones((4, 4, 4)))
    return grid_problem((n3, n3, n3), k=k, source=1.0)


def case_amg3d(n3, repeat, who):
    import numpy as np

    p = _aniso_problem(n3)
    A, b = p.matrix(), p.rhs.ravel()
    if who == "skiff":
        from skiff.kernels.solve import Solver

        Solver(_aniso_problem(16).matrix(), method="cg", precond="amg").solve(
            _aniso_problem(16).rhs.ravel())

        def setup():
            return Solver(A, method="cg", precond="amg")

        def solve(s):
            return s.solve(b, rtol=1e-8)
    else:
        import pyamg

        def setup():
            return pyamg.smoothed_aggregation_solver(A)

        def solve(ml):
            res = []
            x = ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=300)
            return x, res

    ts, obj = _best(setup, repeat)
    tsol, out = _best(lambda: solve(obj), repeat)
    if who == "skiff":
        x, its = out.x, out.iterations
    else:
        x, its = out[0], len(out[1]) - 1
    rel = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
    return {"setup": ts, "solve": tsol, "iterations": its, "relres": rel}


def case_gpu(shape, who):
    """On a GPU: skiff CG + multigrid vs cupyx's (unpreconditioned) CG on the assembled
    matrix, to 1e-8. Skipped without a GPU."""
    from skiff.kernels.backend import cupy, gpu_available

    if not gpu_available():
        return {"skipped": "no GPU"}
    cp = cupy()
    from skiff.kernels.solve import Solver, poisson

    # a constant source, not the manufactured sine: that right-hand side is an eigenvector of
    # the discrete Laplacian, so plain CG would converge in one step
    p = poisson(shape, source=1.0)
    if who == "skiff":
        Solver(poisson((64,) * len(shape)), method="cg", precond="mg", device="cuda").solve()

        def run():
            return Solver(p, method="cg", precond="mg", device="cuda").solve(rtol=1e-8)

        t, sol = _best(run, 3)
        return {"time": t, "iterations": sol.iterations, "relres": sol.relative_residual}
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as cspla

    A = csp.csr_matrix(p.matrix())
    b = cp.asarray(p.rhs.ravel())
    count = [0]
    import inspect  # cupy 14 names the tolerance rtol (scipy's name); cupy 13 named it tol

    tol = {"rtol" if "rtol" in inspect.signature(cspla.cg).parameters else "tol": 1e-8}

    def run():
        count[0] = 0
        x, _ = cspla.cg(A, b, **tol, maxiter=100000,
                        callback=lambda xk: count.__setitem__(0, count[0] + 1))
        cp.cuda.Device().synchronize()
        return x

    t, x = _best(run, 1)
    rel = float(cp.linalg.norm(b - A @ x) / cp.linalg.norm(b))
    return {"time": t, "iterations": count[0], "relres": rel}


def _jump_problem(n):
    import numpy as np

    from skiff.kernels.solve import diffusion

    k = np.ones((n, n))      # a 1000:1 block not aligned with the coarse grids
    k[n // 3: 2 * n // 3 + 1, n // 5: n // 2 + 3] = 1000.0
    return diffusion((n, n), k)


def case_jump(n, repeat, method, precond):
    """1000:1 coefficient jump: setup + solve to 1e-8 (skiff methods or pyamg SA + CG)."""
    p = _jump_problem(n)
    if method == "pyamg-sa":
        import pyamg

        A, b = p.matrix(), p.rhs.ravel()

        def run():
            res = []
            ml = pyamg.smoothed_aggregation_solver(A)
            x = ml.solve(b, tol=1e-8, accel="cg", residuals=res)
            return x, res

        t, (x, res) = _best(run, repeat)
        import numpy as np

        return {"time": t, "iterations": len(res) - 1,
                "relres": float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))}
    from skiff.kernels.solve import Solver

    Solver(_jump_problem(64), method=method, precond=precond).solve(rtol=1e-8)   # warm-up

    def run():
        return Solver(p, method=method, precond=precond).solve(rtol=1e-8, maxiter=400)

    t, sol = _best(run, repeat)
    return {"time": t, "iterations": sol.iterations, "relres": sol.relative_residual,
            "converged": sol.converged}


def case_cold():
    """First solve in a fresh process with an empty numba cache (compile time included)."""
    from skiff.kernels.solve import Solver, poisson

    t0 = time.perf_counter()
    Solver(poisson((64, 64)), method="mg").solve()
    t1 = time.perf_counter()
    Solver(poisson((64, 64)), method="cg", precond="mg").solve()
    return {"first_mg": t1 - t0, "then_cg_mg": time.perf_counter() - t1}


CASES = {
    "cold-start": lambda a: case_cold(),
    "skiff-mg": lambda a: case_skiff(a.n, a.repeat, "mg"),
    "skiff-cg-mg": lambda a: case_skiff(a.n, a.repeat, "cg"),
    "skiff-fmg-solve": lambda a: case_skiff(a.n, a.repeat, "fmg"),
    "skiff-pipecg-mg": lambda a: case_skiff(a.n, a.repeat, "pipecg"),
    "numpy-mg": lambda a: case_skiff(a.n, 1, "mg"),          # run with SKIFF_REFERENCE_OPS=1
    "skiff-fmg": lambda a: case_fmg(a.n, a.repeat),
    "pyamg-rs": lambda a: case_pyamg(a.n, a.repeat, "rs"),
    "pyamg-sa": lambda a: case_pyamg(a.n, a.repeat, "sa"),
    "scipy-splu": lambda a: case_direct(a.n),
    "kernels": lambda a: case_kernels(a.n, a.repeat),
    "jump-cg-mg": lambda a: case_jump(a.n // 2, a.repeat, "cg", "mg"),
    "jump-pipecg-mg": lambda a: case_jump(a.n // 2, a.repeat, "pipecg", "mg"),
    "jump-mg": lambda a: case_jump(a.n // 2, a.repeat, "mg", "auto"),
    "jump-cg-amg": lambda a: case_jump(a.n // 2, a.repeat, "cg", "amg"),
    "jump-pyamg-sa": lambda a: case_jump(a.n // 2, a.repeat, "pyamg-sa", None),
    "amg3d-skiff": lambda a: case_amg3d(a.n3, a.repeat, "skiff"),
    "amg3d-pyamg": lambda a: case_amg3d(a.n3, a.repeat, "pyamg"),
    "gpu-skiff-4096": lambda a: case_gpu((4096, 4096), "skiff"),
    "gpu-cupyx-4096": lambda a: case_gpu((4096, 4096), "cupyx"),
    "gpu-skiff-256c": lambda a: case_gpu((256, 256, 256), "skiff"),
    "gpu-cupyx-256c": lambda a: case_gpu((256, 256, 256), "cupyx"),
}


def _run_case(name, args) -> dict:
    env = {**os.environ, **ENV}
    if name == "numpy-mg":
        env["SKIFF_REFERENCE_OPS"] = "1"
    if name == "cold-start":
        import tempfile

        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="skiff-numba-cold-")
    cmd = [sys.executable, __file__, "--case", name, "--n", str(args.n), "--n3", str(args.n3),
           "--repeat", str(args.repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
        raise RuntimeError(f"case {name} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", default=None)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--n3", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-direct", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--only", default=None,
                    help="comma-separated cases: run just these (each in its own process) and "
                         "print their rows, time relative to the first; results not written")
    args = ap.parse_args()
    if args.case:
        row = CASES[args.case](args)
        if isinstance(row, dict) and "time" in row and CPU_TIMES:
            row["cpu_time"] = CPU_TIMES[-1]
        print(json.dumps(row))
        return
    if args.only:
        names = args.only.split(",")
        unknown = [c for c in names if c not in CASES]
        if unknown:
            raise SystemExit(f"unknown cases {unknown}: choose from {', '.join(CASES)}")
        rows = {name: _run_case(name, args) for name in names}
        first = rows[names[0]]
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
              f"--n {args.n} --n3 {args.n3} --repeat {args.repeat}; time / {names[0]}: "
              "wall, CPU")
        for name, g in rows.items():
            ratio = " ".join(f"{g[k] / first[k]:.2f}x" for k in ("time", "cpu_time")
                             if k in g and first.get(k))
            print(f"{name}: {g.get('time', 0):.3f} s wall, {g.get('cpu_time', 0):.3f} s CPU, "
                  f"{g.get('iterations', '-')} it, relres {g.get('relres', 0):.1e}  {ratio}")
        return
    names = [c for c in CASES if not (args.skip_direct and c == "scipy-splu")]
    got = {}
    for name in names:
        got[name] = _run_case(name, args)
        print(f"{name}: {json.dumps(got[name])}", flush=True)
    text = report(got, args)
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text)


def report(got: dict, args) -> str:
    n, n3 = args.n, args.n3
    ours = min(got[k]["time"] for k in ("skiff-mg", "skiff-fmg-solve", "skiff-cg-mg"))
    load = os.getloadavg()[0]
    lines = [f"# solve benchmarks ({time.strftime('%Y-%m-%d')}, `python benchmarks/bench_solve.py"
             f" --n {n} --n3 {n3}`)", "",
             "Each case in its own process; OPENBLAS/OMP/NUMBA threads = 1 for all. numba compile "
             "time EXCLUDED (warm-up solve first; kernels cached on disk with cache=True). "
             f"A first solve with an empty numba cache (compile included) took "
             f"{got['cold-start']['first_mg']:.1f} s (mg), then "
             f"{got['cold-start']['then_cg_mg']:.1f} s more for cg+mg. "
             f"Best of at least {args.repeat}. Load average at the end: {load:.1f} on "
             f"{os.cpu_count()} cores (other work shares this machine; figures are noisy).",
             "",
             f"## 2D Poisson {n}x{n}, setup + solve to |r|/|b| <= 1e-8 (goal <= 0.1 s)", "",
             "| method | time (s) | iterations | |r|/|b| | time / fastest skiff |",
             "|---|---|---|---|---|"]
    for name in ("skiff-mg", "skiff-cg-mg", "skiff-pipecg-mg", "skiff-fmg-solve", "numpy-mg",
                 "pyamg-rs",
                 "pyamg-sa", "scipy-splu"):
        if name not in got:
            continue
        g = got[name]
        lines.append(f"| {name} | {g['time']:.3f} | {g.get('iterations', '-')} | "
                     f"{g['relres']:.1e} | {g['time'] / ours:.1f}x |")
    fmg = got["skiff-fmg"]
    lines += ["", "skiff-mg: stationary V(2,2) cycles, red-black Gauss-Seidel, fused residual + "
              "restriction + norm; skiff-fmg-solve: full multigrid, then V(2,2) cycles until "
              "the tolerance; skiff-cg-mg: plain CG preconditioned by one symmetric V(2,2) "
              "cycle (restriction = P^T/4); skiff-pipecg-mg: pipelined CG with it; numpy-mg is "
              "skiff-mg with the numba twins off (SKIFF_REFERENCE_OPS=1).", "",
              f"## 1000:1 coefficient jump, {n // 2}x{n // 2} (block not aligned with the "
              "coarse grids), setup + solve to 1e-8", "",
              "| method | time (s) | iterations | |r|/|b| | time / pyamg SA |",
              "|---|---|---|---|---|"]
    peer = got.get("jump-pyamg-sa", {}).get("time")
    for name in ("jump-cg-mg", "jump-pipecg-mg", "jump-mg", "jump-cg-amg", "jump-pyamg-sa"):
        if name in got and peer:
            g = got[name]
            lines.append(f"| {name} | {g['time']:.3f} | {g['iterations']} | "
                         f"{g['relres']:.1e} | {g['time'] / peer:.2f}x |")
    lines += ["", "jump-cg-mg / jump-pipecg-mg: plain and pipelined CG with the symmetric "
              "multigrid preconditioner (piecewise-constant interpolation, mean restriction, "
              "on variable coefficients); jump-mg: stationary V(2,2) cycles (trilinear "
              "interpolation, mean restriction); jump-cg-amg: skiff's smoothed aggregation.", "",
              f"## Full multigrid to discretisation error, {n}x{n} (goal <= 0.03 s)", "",
              f"- time {fmg['time']:.4f} s; max error vs exact {fmg['error']:.3e}, "
              f"discretisation error (converged solve) {fmg['discretisation_error']:.3e}, "
              f"ratio {fmg['error'] / fmg['discretisation_error']:.2f}", "",
              "## Fused kernel bandwidth, float64 (goal >= 60% of the triad of the same size)", "",
              "| kernel | time (ms) | GB/s | % of triad |", "|---|---|---|---|"]
    for size, k in got["kernels"].items():
        triad = k["triad (a = b + s c)"]["GBps"]
        lines.append(f"| **{size}** | | | |")
        for name, row in k.items():
            lines.append(f"| {name} | {row['time'] * 1e3:.2f} | {row['GBps']:.1f} | "
                         f"{100 * row['GBps'] / triad:.0f}% |")
    a, b = got["amg3d-skiff"], got["amg3d-pyamg"]
    lines += ["", "Bytes per cell are the compulsory traffic (each array read or written once).",
              "", f"## AMG, 3D variable coefficient {n3}^3 (log-normal 4^3 blocks), CG to 1e-8",
              "", "| | setup (s) | solve (s) | iterations | |r|/|b| |", "|---|---|---|---|---|",
              f"| skiff SA | {a['setup']:.3f} | {a['solve']:.3f} | {a['iterations']} | "
              f"{a['relres']:.1e} |",
              f"| pyamg SA | {b['setup']:.3f} | {b['solve']:.3f} | {b['iterations']} | "
              f"{b['relres']:.1e} |",
              f"| ratio pyamg/skiff | {b['setup'] / a['setup']:.2f} | "
              f"{b['solve'] / a['solve']:.2f} | | |", ""]
    lines += ["## GPU (4096^2 and 256^3 Poisson, CG+MG vs cupyx CG, to 1e-8)", ""]
    for size in ("4096", "256c"):
        ours, peer = got.get(f"gpu-skiff-{size}", {}), got.get(f"gpu-cupyx-{size}", {})
        if "time" not in ours or "time" not in peer:
            lines.append(f"- {size}: not measured ({ours.get('skipped', 'no GPU')})")
            continue
        lines.append(f"- {size}: skiff {ours['time']:.3f} s ({ours['iterations']} it), cupyx cg "
                     f"{peer['time']:.3f} s ({peer['iterations']} it): "
                     f"{peer['time'] / ours['time']:.1f}x")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

"""The first ``%solve poisson --grid 256x256`` in a new kernel: import, first solve, later solves.

    python benchmarks/bench_first_use.py [--repeat 3] [--tree PATH] [--write]

Each sample is a fresh Python (a subprocess) that does what a notebook's first cells do:
IPython's ``InteractiveShell`` with ``%load_ext skiff`` (the *import* column), then
``%solve poisson --grid 256x256 --wait`` (the *first solve*, from the magic to the job done,
its pictures and result written). Then it waits for the solver's numba kernels to finish
loading in the background and times the same line again (*next solve*). Two states of numba's
disk cache: *warm* (the kernels compiled before, as ``make install`` leaves them: ``python -m
skiff.kernels.solve``) and *cold* (``NUMBA_CACHE_DIR`` pointing at an empty folder).

The peer is the same solve as a plain library call on the numpy references in a process that
already imported everything and solved once (``SKIFF_REFERENCE_OPS=1``, no job, no pictures;
the best of three): the floor a first solve on the references could reach. ``--tree PATH``
measures another checkout (an older skiff) the same way.
Goal (issue 16 item 9): the first solve ≤ 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "first-use.md"
LINE = "poisson --grid 256x256 --wait"

CHILD = textwrap.dedent(f"""
    import contextlib, io, json, sys, time
    T = time.perf_counter
    t0 = T()
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    t1 = T()
    with contextlib.redirect_stdout(io.StringIO()):
        job = shell.run_line_magic("solve", {LINE!r})
    t2 = T()
    assert job.status == "done", job.status
    loaded = {{m: m in sys.modules for m in ("matplotlib", "numba", "scipy")}}
    from skiff.kernels.solve import solver
    t3 = T()
    if hasattr(solver, "load_numba"):
        solver.load_numba()              # the background load, to its end
    t4 = T()
    with contextlib.redirect_stdout(io.StringIO()):
        again = shell.run_line_magic("solve", {LINE!r})
    t5 = T()
    print(json.dumps({{"import": t1 - t0, "first": t2 - t1, "load_rest": t4 - t3,
                      "next": t5 - t4, "modules": loaded}}))
""")

PEER = textwrap.dedent("""
    import json, time
    from skiff.kernels.solve import poisson, Solver
    p = poisson((256, 256))
    times = []
    for _ in range(4):
        t0 = time.perf_counter()
        Solver(p).solve(rtol=1e-8)
        times.append(time.perf_counter() - t0)
    print(json.dumps({"peer": min(times[1:])}))
""")


KERNEL_CELLS = [
    "import time\nt0 = time.perf_counter()\n%load_ext skiff\n"
    "print('import', time.perf_counter() - t0)",
    f"t0 = time.perf_counter()\njob = %solve {LINE}\n"
    "print('first', time.perf_counter() - t0, job.status)",
    f"time.sleep(3)\nt0 = time.perf_counter()\njob = %solve {LINE}\n"
    "print('next', time.perf_counter() - t0, job.status)",
]


def run_kernel(tree: Path) -> dict:
    """The same in a real Jupyter kernel (nbclient, ipykernel), numba's cache warm."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in KERNEL_CELLS]
    old = dict(os.environ)
    with tempfile.TemporaryDirectory() as runs:
        os.environ.update(PYTHONPATH=str(tree), SKIFF_RUNS=runs, OPENBLAS_NUM_THREADS="1",
                          OMP_NUM_THREADS="1", MPLBACKEND="Agg")
        try:
            NotebookClient(nb, kernel_name="python3", timeout=300).execute()
        finally:
            os.environ.clear()
            os.environ.update(old)
    out = {}
    for cell in nb.cells:
        for o in cell.outputs:
            for line in o.get("text", "").splitlines():
                key, value = line.split()[:2]
                out[key] = float(value)
    return out


def run_child(code: str, tree: Path, env_extra: dict) -> dict:
    with tempfile.TemporaryDirectory() as runs:
        env = dict(os.environ, PYTHONPATH=str(tree), SKIFF_RUNS=runs, OPENBLAS_NUM_THREADS="1",
                   OMP_NUM_THREADS="1", MPLBACKEND="Agg", **env_extra)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300, cwd=runs)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(tree: Path, repeat: int) -> dict:
    rows = {}
    # warm: compile into the cache once first (what make install does)
    subprocess.run([sys.executable, "-m", "skiff.kernels.solve"],
                   env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, timeout=600)
    rows["warm"] = [run_child(CHILD, tree, {}) for _ in range(repeat)]
    cold = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run_child(CHILD, tree, {"NUMBA_CACHE_DIR": cache}))
    rows["cold"] = cold
    rows["peer"] = [run_child(PEER, tree, {"SKIFF_REFERENCE_OPS": "1"})
                    for _ in range(repeat)]
    rows["kernel"] = [run_kernel(tree) for _ in range(repeat)]
    return rows


def med(samples, key) -> float:
    return statistics.median(s[key] for s in samples)


def table(rows: dict, label: str) -> str:
    peer = med(rows["peer"], "peer")
    out = [f"| {label}: numba cache | import (`%load_ext skiff`) | first solve | "
           f"first / peer | rest of the numba load | next solve | modules after the first "
           f"solve |", "|---|---|---|---|---|---|---|"]
    for state in ("warm", "cold"):
        s = rows[state]
        mods = ", ".join(m for m, v in s[0]["modules"].items() if v) or "none of them"
        out.append(f"| {state} | {med(s, 'import'):.3f} s | {med(s, 'first'):.3f} s | "
                   f"{med(s, 'first') / peer:.1f}x | {med(s, 'load_rest'):.2f} s | "
                   f"{med(s, 'next'):.3f} s | {mods} |")
    k = rows["kernel"]
    out.append(f"| warm, in a Jupyter kernel (nbclient) | {med(k, 'import'):.3f} s | "
               f"{med(k, 'first'):.3f} s | {med(k, 'first') / peer:.1f}x | | "
               f"{med(k, 'next'):.3f} s (3 s later) | |")
    out.append(f"\nPeer (the same solve as a library call on the numpy references, everything "
               f"imported, best of three): {peer:.3f} s.")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    ap.add_argument("--write", action="store_true", help=f"write {RESULTS.name}")
    args = ap.parse_args()
    rows = measure(args.tree.resolve(), args.repeat)
    text = table(rows, "this tree" if args.tree.resolve() == ROOT else str(args.tree))
    load = os.getloadavg()
    text += f"\nLoad average while measured: {load[0]:.1f} (2 cores).\n"
    print(text)
    if args.write:
        RESULTS.write_text("# First use: the first `%solve` in a new kernel\n\n"
                           "`python benchmarks/bench_first_use.py --repeat 3 --write`\n\n"
                           + text)


if __name__ == "__main__":
    main()

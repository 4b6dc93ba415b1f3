"""``make gpu-check``: every ``gpu``-marked test and the GPU rows of the benchmarks, on one GPU,
within a time budget (8 minutes by default), written to ``benchmarks/results/gpu.md``.

    .venv/bin/python tools/gpu_check.py [--budget 470] [--out benchmarks/results/gpu.md]

Without a GPU it says so, writes a short gpu.md that says so, and exits 0: the check is meant
to run first whenever a GPU is lent, and to be harmless where none is. With a GPU it exits 1
when a test failed. Each part runs in its own process with a timeout taken from what is left of
the budget; a part that did not fit is written down as not run, never left out silently.

Parts, in order of value: the ``gpu`` tests (``pytest -m gpu``); the solve benchmark's GPU rows
(CG + multigrid against cupyx's CG, 4096^2 and 256^3 Poisson); the OCR benchmark's GPU rows
(skiff on onnxruntime's CUDA provider against onnxruntime-gpu used naively, 4 images per
category of the synthetic set).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
       "MPLBACKEND": "Agg"}
SOLVE_ROWS = ("gpu-skiff-4096", "gpu-cupyx-4096", "gpu-skiff-256c", "gpu-cupyx-256c")
OCR_ROWS = ("skiff-gpu", "naive-gpu")


def _run(cmd, timeout: float, **kw) -> subprocess.CompletedProcess | None:
    """The finished process, or None when it ran past ``timeout`` (it is killed)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                              env=_env(kw.pop("env", {})), **kw)
    except subprocess.TimeoutExpired:
        return None


def _env(extra: dict) -> dict:
    """This process's environment with ENV on top; PYTHONPATH keeps what it had, after ROOT
    (packages carried beside the checkout, tools/gpu-check-offline.sh)."""
    env = {**os.environ, **ENV, **extra}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]])
    return env


def find_gpu() -> tuple[str | None, str]:
    """(the first GPU's name, or None; why none was found)."""
    probe = ("import cupy\n"
             "n = cupy.cuda.runtime.getDeviceCount()\n"
             "p = cupy.cuda.runtime.getDeviceProperties(0) if n else {}\n"
             "name = p.get('name', b'')\n"
             "print(n, name.decode() if isinstance(name, bytes) else name)")
    proc = _run([sys.executable, "-c", probe], 120)
    if proc is None:
        return None, "asking cupy for the GPUs took more than 120 s"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["cupy failed"])[-1]
        return None, f"cupy sees no GPU ({last})"
    count, _, name = proc.stdout.strip().partition(" ")
    if count == "0":
        return None, "cupy reports 0 devices"
    return f"{name} (x{count})", ""


GPU_TEST = re.compile(r"mark\.gpu\b|^def test_\w*\([^)]*\bxp\b", re.M)


def gpu_test_files() -> list[str]:
    """The test files with a ``gpu``-marked test or one that takes the ``xp`` fixture (its
    GPU case is marked in tests/conftest.py), relative to the repository."""
    return sorted(str(f.relative_to(ROOT)) for f in (ROOT / "tests").rglob("test_*.py")
                  if GPU_TEST.search(f.read_text(encoding="utf-8")))


def environment() -> list[str]:
    """What the GPU machine runs on: the versions that decide what the tests exercise."""
    probe = ("import importlib, json, platform\n"
             "out = {'python': platform.python_version()}\n"
             "for name in ('numpy', 'scipy', 'numba', 'cupy', 'torch', 'onnxruntime', "
             "'mpi4py'):\n"
             "    try:\n"
             "        out[name] = importlib.import_module(name).__version__\n"
             "    except Exception as e:\n"
             "        out[name] = f'missing ({type(e).__name__})'\n"
             "try:\n"
             "    import cupy\n"
             "    rt = cupy.cuda.runtime\n"
             "    out['cuda runtime'] = rt.runtimeGetVersion()\n"
             "    out['cuda driver'] = rt.driverGetVersion()\n"
             "    from cupy.cuda import nccl\n"
             "    out['nccl'] = nccl.get_version() if nccl.available else 'not available'\n"
             "except Exception as e:\n"
             "    out['nccl'] = f'not available ({type(e).__name__}: {e})'\n"
             "try:\n"
             "    import onnxruntime as ort\n"
             "    out['onnxruntime providers'] = ', '.join(ort.get_available_providers())\n"
             "except Exception:\n"
             "    pass\n"
             "print(json.dumps(out))")
    proc = _run([sys.executable, "-c", probe], 120)
    if proc is None or proc.returncode != 0:
        return ["the environment probe failed"]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return ["| package | version |", "|---|---|",
            *(f"| {k} | {_cell(str(v))} |" for k, v in got.items())]


class Budget:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self, reserve: float = 0.0) -> float:
        return self.end - time.monotonic() - reserve


def run_tests(budget: Budget) -> tuple[list[str], bool]:
    """Markdown lines for the ``gpu`` tests, and whether they all passed."""
    junit = Path(tempfile.mkdtemp(prefix="skiff-gpu-check-")) / "junit.xml"
    t0 = time.monotonic()
    # only the files that hold gpu tests are collected, and a file that fails to import (a
    # package the GPU machine lacks) is reported without stopping the others
    proc = _run([sys.executable, "-m", "pytest", *gpu_test_files(), "-m", "gpu", "-q", "-p",
                 "no:cacheprovider", "--continue-on-collection-errors",
                 f"--junitxml={junit}"], max(30.0, budget.left(150)))
    seconds = time.monotonic() - t0
    if proc is None:
        return [f"The `gpu` tests ran past their share of the budget ({seconds:.0f} s) and were "
                "stopped: not all of them ran."], False
    if not junit.exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        return ["pytest wrote no report:", "", "```", tail, "```"], False
    rows, failed, passed = [], [], {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        if problem is not None:
            failed.append(name)
            rows.append(f"| {name} | **failed**: {_cell(problem.get('message', ''))} |")
        elif skipped is not None:
            rows.append(f"| {name} | skipped: {_cell(skipped.get('message', ''))} |")
        else:  # passes are counted per file: the failures and skips are the news
            n, t = passed.get(case.get("classname", ""), (0, 0.0))
            passed[case.get("classname", "")] = (n + 1, t + float(case.get("time", 0)))
    count = sum(n for n, _ in passed.values())
    lines = [f"{count} passed, {len(failed)} failed, {len(rows) - len(failed)} "
             f"skipped in {seconds:.0f} s (`pytest tests -m gpu`).", ""]
    if rows:
        lines += ["| test | result |", "|---|---|", *rows, ""]
    lines += ["| file | passed | seconds |", "|---|---|---|",
              *(f"| {k} | {n} | {t:.1f} |" for k, (n, t) in sorted(passed.items()))]
    return lines, proc.returncode in (0, 5) and not failed  # 5: no test selected


def _cell(text: str) -> str:
    return " ".join(text.split())[:160].replace("|", "/")


def run_solve_rows(budget: Budget) -> list[str]:
    got, lines = {}, ["| case | time (s) | iterations | relative residual | note |",
                      "|---|---|---|---|---|"]
    for name in SOLVE_ROWS:
        left = budget.left(60)
        if left < 20:
            lines.append(f"| {name} | | | | not run: the time budget was spent |")
            continue
        proc = _run([sys.executable, "benchmarks/bench_solve.py", "--case", name], left)
        if proc is None or proc.returncode != 0:
            why = "timed out" if proc is None else _cell(proc.stderr.strip()[-300:])
            lines.append(f"| {name} | | | | failed: {why} |")
            continue
        got[name] = row = json.loads(proc.stdout.strip().splitlines()[-1])
        time_s = f"{row['time']:.3f}" if "time" in row else ""
        rel = f"{row['relres']:.1e}" if "relres" in row else ""
        lines.append(f"| {name} | {time_s} | {row.get('iterations', '')} | {rel} | "
                     f"{_cell(str(row.get('skipped', '')))} |")
    for size in ("4096", "256c"):
        ours, peer = got.get(f"gpu-skiff-{size}", {}), got.get(f"gpu-cupyx-{size}", {})
        if "time" in ours and "time" in peer:
            lines.append(f"\n{size}: cupyx CG / skiff CG+MG time = "
                         f"{peer['time'] / ours['time']:.1f}x")
    return lines


def run_flow_rows(budget: Budget) -> list[str]:
    """DFG 2D-2 for one simulated second (N = 64 and 128, dt 0.005) with the stepper's linear
    solves on the CPU and on the GPU: the same drag, and the time of each."""
    lines = ["| N | device | seconds | linear share | cd max | note |",
             "|---|---|---|---|---|---|"]
    for n, device in ((64, "cpu"), (64, "cuda"), (128, "cpu"), (128, "cuda")):
        left = budget.left(30)
        if left < 60:
            lines.append(f"| {n} | {device} | | | | not run: the time budget was spent |")
            continue
        proc = _run([sys.executable, "benchmarks/bench_flow.py", "--child", "2d-2",
                     "--resolution", str(n), "--dt", "0.005", "--t-end", "1.0",
                     "--device", device], left)
        if proc is None or proc.returncode != 0:
            why = "timed out" if proc is None else _cell(proc.stderr.strip()[-300:])
            lines.append(f"| {n} | {device} | | | | failed: {why} |")
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        lines.append(f"| {n} | {device} | {row['seconds']:.1f} | "
                     f"{100 * row['linear_share']:.0f}% | {row.get('cd_max')} | "
                     f"{_cell(row.get('method', ''))} |")
    return lines


def run_train_rows(budget: Budget) -> list[str]:
    """gpt-mini's training step (16 x 128 tokens, AdamW, clipping) on the GPU: skiff on cupy
    against PyTorch on CUDA with its own fused attention, 20 timed steps each."""
    lines = ["| method | tokens/s | step (ms) | loss | note |", "|---|---|---|---|---|"]
    got = {}
    for method in ("skiff-gpu", "skiff-gpu-graph", "torch-gpu"):
        left = budget.left(20)
        if left < 30:
            lines.append(f"| {method} | | | | not run: the time budget was spent |")
            continue
        proc = _run([sys.executable, "benchmarks/bench_train.py", "--worker", method,
                     "--steps", "20"], left)
        if proc is None or proc.returncode != 0:
            why = "timed out" if proc is None else _cell(proc.stderr.strip()[-300:])
            lines.append(f"| {method} | | | | failed: {why} |")
            continue
        got[method] = row = json.loads(proc.stdout.strip().splitlines()[-1])
        note = ""
        if "replays" in row:
            note = (f"{row['replays']} graph replays" if row.get("eager_because") is None
                    else f"eager: {_cell(str(row['eager_because']))}")
        lines.append(f"| {method} | {row['tokens_per_s']:.0f} | {1e3 * row['step_s']:.1f} | "
                     f"{row['loss']:.4f} | {note} |")
    for mine in ("skiff-gpu", "skiff-gpu-graph"):
        if mine in got and "torch-gpu" in got:
            lines.append(f"\n{mine} / PyTorch tokens/s = "
                         f"{got[mine]['tokens_per_s'] / got['torch-gpu']['tokens_per_s']:.2f}x")
    return lines


def run_ocr_rows(budget: Budget) -> list[str]:
    if budget.left(30) < 60:
        return ["not run: the time budget was spent"]
    probe = "import onnxruntime as o; print('CUDAExecutionProvider' in o.get_available_providers())"
    proc = _run([sys.executable, "-c", probe], 60)
    if proc is None or proc.stdout.strip() != "True":
        return ["not run: this onnxruntime has no CUDA provider (skiff's OCR would run on the "
                "CPU; install onnxruntime-gpu, docs/ocr.md)"]
    folder = Path(tempfile.mkdtemp(prefix="skiff-gpu-ocr-"))
    make = ("import sys; from skiff.kernels.ocr.synth import make_test_set, write_test_set; "
            "write_test_set(sys.argv[1], make_test_set(4, seed=1))")
    proc = _run([sys.executable, "-c", make, str(folder)], 120)
    if proc is None or proc.returncode != 0:
        return ["not run: the synthetic test set could not be made"]
    images = sum(1 for _ in open(folder / "truth.jsonl", encoding="utf-8"))
    lines = ["| method | images/s | note |", "|---|---|---|"]
    for method in OCR_ROWS:
        left = budget.left(20)
        if left < 30:
            lines.append(f"| {method} | | not run: the time budget was spent |")
            continue
        proc = _run([sys.executable, "benchmarks/bench_ocr.py", "--worker", method, "--folder",
                     str(folder), "--threads", "2"], left)
        out = folder / f"out-{method}.json"
        if proc is None or proc.returncode != 0 or not out.exists():
            why = "timed out" if proc is None else _cell(proc.stderr.strip()[-300:])
            lines.append(f"| {method} | | failed: {why} |")
            continue
        seconds = json.loads(out.read_text())["seconds"]
        lines.append(f"| {method} | {images / seconds:.1f} | {images} images |")
    return lines


def header(gpu: str | None) -> list[str]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return ["# GPU check", "",
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `make gpu-check` "
            f"(tools/gpu_check.py) on {platform.node()}: {gpu or 'no GPU'}; {os.cpu_count()} "
            f"cores, load average {load:.1f}.", ""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=470.0, help="seconds for everything")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gpu.md"))
    ap.add_argument("--parts", default="tests,solve,flow,train,ocr",
                    help="comma-separated parts to run (the others are written as not run)")
    args = ap.parse_args(argv)
    parts = set(args.parts.split(","))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    budget = Budget(args.budget)
    gpu, why = find_gpu()
    if gpu is None:
        out.write_text("\n".join([*header(None), f"No GPU was found: {why}. Nothing was run; "
                                  "run `make gpu-check` on a machine with a GPU.", ""]))
        print(f"gpu-check: no GPU was found ({why}); wrote {out}")
        return 0
    print(f"gpu-check: {gpu}; budget {args.budget:.0f} s", flush=True)
    def part(name, run):
        return run(budget) if name in parts else [f"not run (--parts {args.parts})"]

    tests, ok = run_tests(budget) if "tests" in parts else ([f"not run (--parts {args.parts})"],
                                                              True)
    print("\n".join(tests[:1]), flush=True)
    lines = [*header(gpu), "## environment", "", *environment(), "", "## gpu tests", "",
             *tests, "",
             "## solve benchmark, GPU rows (`bench_solve.py --case gpu-...`, to 1e-8)", "",
             *part("solve", run_solve_rows), "",
             "## flow benchmark, DFG 2D-2 stepper on CPU and GPU (`bench_flow.py --child ...`)",
             "", *part("flow", run_flow_rows), "",
             "## training step, GPU rows "
             "(`bench_train.py --worker skiff-gpu|skiff-gpu-graph|torch-gpu`)", "",
             *part("train", run_train_rows), "",
             "## OCR benchmark, GPU rows (`bench_ocr.py --worker ...`)", "",
             *part("ocr", run_ocr_rows), ""]
    out.write_text("\n".join(lines))
    print(f"gpu-check: wrote {out} ({args.budget - budget.left():.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

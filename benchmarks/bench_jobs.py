"""Job launch → first event latency, against the bare mechanism measured in the same run.

    python benchmarks/bench_jobs.py [--repeat 5]

thread: ``launch("demo")`` until the runner's ``running`` event, against starting a bare
``threading.Thread`` and seeing it run. 2 MPI ranks: until rank 0's ``running`` event,
against a bare ``mpiexec -n 2 python -c ...`` whose rank 0 writes a file (the same point the
worker reaches before it writes its first event; mpi4py is imported later by the job itself).
Goals (issue 2): thread ≤ 0.2 s, 2 MPI ranks ≤ 3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def first_running(job, timeout=60.0) -> float:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for e in job.events():
            if e["type"] == "status" and e.get("status") == "running":
                return e["t"]
        time.sleep(0.002)
    raise TimeoutError("no running event")


def skiff_latency(np: int) -> float:
    from skiff.jobs import launch

    t0 = time.time()
    job = launch("demo", {"steps": 1, "sleep": 0}, np=np)
    t1 = first_running(job)
    job.wait(60)
    return t1 - t0


def bare_thread() -> float:
    seen = threading.Event()
    t0 = time.perf_counter()
    th = threading.Thread(target=seen.set)
    th.start()
    seen.wait()
    dt = time.perf_counter() - t0
    th.join()
    return dt


def bare_mpi() -> float:
    from skiff.jobs.process import find_mpiexec, rank_env

    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "up")
        code = f"import os\nif os.environ.get('PMI_RANK') == '0': open({marker!r}, 'w')"
        t0 = time.time()
        proc = subprocess.Popen([find_mpiexec(), "-n", "2", sys.executable, "-c", code],
                                env=rank_env(2))
        while not os.path.exists(marker):
            time.sleep(0.002)
        dt = time.time() - t0
        proc.wait()
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as runs:
        os.environ["SKIFF_RUNS"] = runs
        rows = []
        for name, ours, peer, goal in (
            ("thread job", lambda: skiff_latency(1), bare_thread, 0.2),
            ("2 MPI ranks", lambda: skiff_latency(2), bare_mpi, 3.0),
        ):
            ours()  # warm imports
            a = statistics.median(ours() for _ in range(args.repeat))
            b = statistics.median(peer() for _ in range(args.repeat))
            rows.append((name, a, b, goal))
    print("| launch → first event | skiff (median) | bare mechanism | ratio | goal |")
    print("|---|---|---|---|---|")
    for name, a, b, goal in rows:
        ok = "met" if a <= goal else "MISSED"
        print(f"| {name} | {a * 1000:.1f} ms | {b * 1000:.1f} ms | {a / b:.2f}x | "
              f"≤ {goal:g} s ({ok}) |")


if __name__ == "__main__":
    main()

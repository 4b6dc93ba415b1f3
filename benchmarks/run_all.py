"""Run every ``benchmarks/bench_*.py`` in its own process and print what each prints.

    python benchmarks/run_all.py [NAME ...]     # e.g. jobs solve

Threads are set equally for skiff and its peers: OPENBLAS_NUM_THREADS=1 unless the caller set it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    wanted = set(argv)
    env = {**os.environ}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("MPLBACKEND", "Agg")
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        name = script.stem.removeprefix("bench_")
        if wanted and name not in wanted:
            continue
        print(f"\n## {name}\n", flush=True)
        t0 = time.monotonic()
        code = subprocess.call([sys.executable, str(script)], env=env, cwd=HERE.parent)
        print(f"\n({name}: {time.monotonic() - t0:.0f} s, exit {code})", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

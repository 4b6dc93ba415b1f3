"""Writing a benchmark's results page without losing what earlier runs said.

A page in ``benchmarks/results/`` holds the latest run at the top, then, under "Earlier
runs", everything the page said before (its tables and the readings written under them by
hand). ``collect.py`` gathers the pages into ``RESULTS.md``.
"""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["write_keeping_earlier", "publish", "machine_line", "run_workers"]


def write_keeping_earlier(path: str | Path, text: str) -> Path:
    """Write ``text`` (starting with the page's ``# title``) to ``path``; the page's former
    content, less its title, follows under ``## Earlier runs (before <now>)``."""
    path = Path(path)
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if old.startswith("# "):
        old = old.split("\n", 1)[1] if "\n" in old else ""
    doc = text.rstrip("\n") + "\n"
    if old.strip():
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        doc += f"\n## Earlier runs (before {when})\n\n{old.strip()}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc, encoding="utf-8")
    return path


def publish(path: str | Path, lines: list[str]) -> Path:
    """Print a run's page (``lines``) and write it to ``path`` above what the page said
    before (:func:`write_keeping_earlier`); says where on stderr."""
    import sys

    text = "\n".join(lines)
    print(text)
    out = write_keeping_earlier(path, text + "\n")
    print(f"written {out}", file=sys.stderr)
    return out



def machine_line(threads: int) -> str:
    """The page's ``Machine:`` line: CPU, cores, the threads each method had, the time and
    the load average at the end (what a reader needs to trust the times)."""
    import os
    import platform

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, {threads} threads per "
            f"method; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at "
            f"the end {load}.")


def run_workers(script: str | Path, methods, args: list[str]) -> dict:
    """Run ``script --worker METHOD *args`` for each method, one process each (threads set
    equally: ``OPENBLAS_NUM_THREADS`` as the caller has it, else 1), and return each
    method's last stdout line read as JSON."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
    got = {}
    for method in methods:
        print(f"{method} …", file=sys.stderr, flush=True)
        out = subprocess.run([sys.executable, str(script), "--worker", method,
                              *map(str, args)], capture_output=True, text=True, env=env,
                             check=True)
        got[method] = json.loads(out.stdout.strip().splitlines()[-1])
    return got

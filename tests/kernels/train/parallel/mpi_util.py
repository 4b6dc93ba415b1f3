"""Run a Python script on N real MPI ranks (``.venv/bin/mpiexec``) with a hard timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parents[3]


def mpiexec() -> str:
    """The venv's mpiexec (the ``mpi`` extra), else the one on PATH (skiff's own rule)."""
    from skiff.jobs.process import find_mpiexec

    return find_mpiexec()


def run_mpi(np: int, script: str, *args: str, timeout: float = 60.0, cwd=None) -> list[dict]:
    """Run ``scripts/<script>`` on ``np`` ranks; each rank prints one JSON line ``RESULT {..}``.

    Returns the per-rank results sorted by rank; fails with the ranks' output on error.
    Skips when this machine has fewer cores than ``np``: a test never starts more ranks
    than there are cores (oversubscribed ranks slow each other down many times and have run
    a machine out of memory), so the 4-rank cases run on machines of 4 cores or more.
    """
    from skiff.kernels.backend import cpu_count

    cores = cpu_count()  # the cores this process may run on
    if np > cores:
        import pytest

        pytest.skip(f"{np} ranks need {np} cores; this machine has {cores}")
    env = dict(os.environ)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    cmd = ["timeout", "-s", "KILL", str(int(timeout)), mpiexec(), "-n", str(np),
           sys.executable, str(HERE / "scripts" / script), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd or ROOT)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"mpiexec -n {np} {script} exited {proc.returncode}:\n{out[-6000:]}")
    results = results_in(proc.stdout)
    assert len(results) == np, f"expected {np} results, got {len(results)}:\n{out[-4000:]}"
    return results


def results_in(text: str, marker: str = "RESULT ") -> list[dict]:
    """Each JSON object that follows a ``marker`` in ``text``, sorted by ``rank`` (in the order
    printed where they have none).

    Ranks' lines interleave on mpiexec's pipe: unbuffered, ``print`` writes a line's text and
    its newline apart, so one rank's line can land between another's text and newline. Each
    object is decoded where it starts, not line by line."""
    decoder = json.JSONDecoder()
    results = []
    pos = text.find(marker)
    while pos >= 0:
        obj, end = decoder.raw_decode(text, pos + len(marker))
        results.append(obj)
        pos = text.find(marker, end)
    return sorted(results, key=lambda r: r.get("rank", 0))


def json_after(text: str, marker: str):
    """The JSON value that follows the first ``marker`` in ``text`` (a list, an object...),
    decoded where it starts, not line by line: see ``results_in``."""
    return json.JSONDecoder().raw_decode(text, text.index(marker) + len(marker))[0]


def line_after(text: str, marker: str) -> str:
    """``marker`` and the rest of its line, wherever it starts in ``text``: another process's
    text can land before it on the same line (``results_in``), or between it and its newline,
    so a check looks for words in it, never at the line's start or end."""
    return text[text.index(marker):].split("\n", 1)[0]

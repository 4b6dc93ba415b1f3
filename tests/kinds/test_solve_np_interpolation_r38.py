"""Round 38: the distributed solver now reads ``--interpolation`` (h9: it was dropped on the
way to the ranks), but the front still refused ``--interpolation`` with ``--np``. The oracle:
the one-rank solve of the same problem (same iterations, same interpolation named)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="2 ranks need 2 cores")


def _solve(tmp_path, n):
    env = {**os.environ, "SKIFF_RUNS": str(tmp_path / "runs"), "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "skiff", "solve", "poisson", "--grid",
                          "64x64", "--interpolation", "constant", "--np", str(n), "--json"],
                         capture_output=True, text=True, env=env, timeout=240, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    return doc.get("result", doc)


def test_interpolation_reaches_two_ranks_as_one(tmp_path):
    one, two = _solve(tmp_path, 1), _solve(tmp_path, 2)
    assert "constant interpolation" in one["solver"]
    assert "constant interpolation" in two["solver"] and "2 ranks" in two["solver"]
    assert two["iterations"] == one["iterations"]

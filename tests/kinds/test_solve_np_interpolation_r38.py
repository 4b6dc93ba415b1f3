"""Round 38: the distributed solver now reads ``--interpolation`` (h9: it was dropped on the
way to the ranks), but the front still refused ``--interpolation`` with ``--np``. The oracle:
the one-rank solve of the same problem (same iterations, same interpolation named)."""

from __future__ import annotations

import json
import os

import pytest

from skiff.cli import main

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="2 ranks need 2 cores")


def _solve(capsys, n):
    # ``python -m skiff`` in this process (``skiff.__main__`` is ``sys.exit(main())``); the
    # two ranks are still mpiexec's processes. A subprocess each paid the interpreter's,
    # numpy's and scipy's imports again (round 46)
    capsys.readouterr()
    status = main(["solve", "poisson", "--grid", "64x64", "--interpolation", "constant",
                   "--np", str(n), "--json"])
    out = capsys.readouterr()
    assert status == 0, out.err[-2000:]
    doc = json.loads(out.out)
    return doc.get("result", doc)


def test_interpolation_reaches_two_ranks_as_one(runs_dir, capsys):
    one, two = _solve(capsys, 1), _solve(capsys, 2)
    assert "constant interpolation" in one["solver"]
    assert "constant interpolation" in two["solver"] and "2 ranks" in two["solver"]
    assert two["iterations"] == one["iterations"]

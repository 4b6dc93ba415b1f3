"""Round 28: a stop seen on one rank stops every rank at the same step.

Before, the ranks agreed on rank 0's cancel only: a cancel seen on rank 1 alone was dropped
(rank 1 trained all 8 steps), and a callback that returned True on rank 1 only made rank 1
leave the loop while rank 0 waited in the next gradient allreduce (the job hung). The
oracle is the same 2-rank run uninterrupted: the stopped runs' losses are its first steps,
and both ranks stop at one step, write their final checkpoint and say why.
"""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
def test_stop_on_one_rank_stops_both(tmp_path):
    results = run_mpi(2, "stop_agree_r28b_check.py", str(tmp_path), timeout=60)
    full = results[0]["full"]
    assert full["steps"] == 8 and results[1]["full"]["losses"] == full["losses"]
    for case, why, at in (("cancel", "cancelled", 4), ("callback", "stopped by a callback",
                                                      3)):
        mine = [r[case] for r in results]
        for got in mine:  # a cancel is agreed at the next step boundary: one step later
            assert got["steps"] == at, (case, got)
            assert got["stopped"] == why, (case, got)
            assert got["losses"] == full["losses"][:at], (case, got)
            assert got["checkpoint"] == f"step-{at:08d}", (case, got)
        assert mine[0]["weights"] == mine[1]["weights"]
        assert (tmp_path / case / f"step-{at:08d}").is_dir()

"""Batches that do not split evenly over data-parallel ranks give one device's step.

Found by a user moving a one-process run to 2 ranks: 101 rows at batch 10 ended with a
one-row batch, rank 1 got no rows, its mean loss was NaN and the job failed with "training
diverged at step 11"; 101 rows in one batch (51 and 50 rows) averaged the two ranks' means
(a loss 6e-4 off one device, weights 2e-3 off); a batch size of 5 on 2 ranks was refused
inside the ranks ("no layout of 2 devices suits MLP"). Now each rank's loss is weighted by
its share of the rows (a rank without rows runs a stand-in row at weight 0). The oracle is
the same Trainer on one device, run in each rank's process.
"""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.fixture(scope="module")
def launched():
    """dp, zero2 and zero1 in one launch (round 43 h10: two launches before)."""
    return run_mpi(2, "uneven_check.py", "dp", "zero2", "zero1", timeout=300)


@pytest.mark.parametrize("kinds", [("dp", "zero2"), ("zero1",)])
def test_uneven_batches_match_one_device(launched, kinds):
    for res in launched:
        for kind in kinds:
            for case in ("last-row", "odd-rows", "batch-5"):
                got = res[f"{kind}/{case}"]
                assert got["finite"], (kind, case, got)
                assert got["steps"][0] == got["steps"][1], (kind, case, got)
                assert got["loss"] < 2e-6, (kind, case, got)
                assert got["weights"] < 2e-6, (kind, case, got)

"""Round 31: an MoE balancing term under a token loss accumulated over micro-batches on 2
ranks is weighted as one device weighs it: by the micro-batch's scored targets. Each rank
divided it by its own scored share of the window (its loss's factor) only where the batch
was packed; array rows with -100 targets were weighted by the rank's scored targets: 2e-6
of the loss at ``aux_coef=0.01``, and at ``aux_coef=1`` 1.3e-4 of the loss and 3.8e-4 of
the weights off one device, ep and dp alike (gpt-moe, micro-batches of 5 and 28 scored
targets, rank 1 on a stand-in row in the second window). Now 3e-8 and 1.2e-7. The oracle is
the same run on one device, whose step is numpy's cross-entropy over the window's scored
targets (``test_ep_accum_tokens_r31.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from .mpi_util import run_mpi


@pytest.fixture(scope="module")
def launched():
    """Both strategies in one launch (round 42 h17: a launch each was two more interpreters
    and one device's run again)."""
    return run_mpi(2, "moe_aux_tokens_r31b_check.py", "ep,dp", "1.0", timeout=240)


@pytest.mark.mpi
@pytest.mark.parametrize("strategy", ["ep", "dp"])
def test_the_balancing_term_is_weighted_as_one_device_weighs_it(strategy, launched):
    assert sorted(r["rank"] for r in launched) == [0, 1]
    for r in (rank[strategy] for rank in launched):
        assert len(r["losses"]) == len(r["ref_losses"]) == 4
        np.testing.assert_allclose(r["losses"], r["ref_losses"], rtol=1e-6)
        assert r["weights"] < 1e-6, r["weights"]

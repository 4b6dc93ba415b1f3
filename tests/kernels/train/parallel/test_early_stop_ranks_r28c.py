"""Round 28: early stopping on 2 ranks (its agreement was tested on one process only).

A dp run whose validation loss falls and then rises stops on both ranks at one step, with
the same best step and the same best weights given back; the oracle is the same run on one
process: the same step, best step and validation losses, and its weights. With a validation
set of its own on each rank, the ranks stopped together but each gave back its own best
step's weights (rank 0 step 48's, rank 1 step 56's: the model differed over the ranks); now
they watch the mean of their validation losses, as one process does on both sets together.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from .mpi_util import run_mpi


def _one_process(**kw):
    sys.path.insert(0, str(Path(__file__).parent / "scripts"))
    try:
        from early_stop_ranks_r28c_check import run
    finally:
        sys.path.pop(0)
    return run("single", **kw)


@pytest.mark.mpi
def test_early_stopping_agrees_on_two_ranks():
    results = run_mpi(2, "early_stop_ranks_r28c_check.py", timeout=90)
    one = _one_process()
    assert one["stopped"].startswith("early stopping") and one["steps"] < 160, one
    a, b = results[0]["dp"], results[1]["dp"]
    assert a == b  # the same steps, reason, best step, validation losses and weights
    assert (a["steps"], a["stopped"], a["best_step"]) == (one["steps"], one["stopped"],
                                                           one["best_step"])
    np.testing.assert_allclose(a["val"], one["val"], rtol=1e-5)
    for name, w in one["weights"].items():
        np.testing.assert_allclose(a["weights"][name], w, rtol=1e-5, atol=1e-6)
    both = _one_process(k=(1.0, 1.8))  # one process validates on both ranks' sets
    a, b = results[0]["own_val"], results[1]["own_val"]
    assert (a["steps"], a["best_step"]) == (b["steps"], b["best_step"]) == (
        both["steps"], both["best_step"]), (a, b, both)
    assert a["weights"] == b["weights"]
    for name, w in both["weights"].items():
        np.testing.assert_allclose(a["weights"][name], w, rtol=1e-5, atol=1e-6)

"""Round 31: early stopping's best weights survive a resume under tp and pp.

A split model's checkpoints kept early stopping's count and best loss but not its best
weights (round 30 left it, said on resume): a tp run cut at step 12 and resumed stopped at
step 18 as the whole run does, but kept step 18's weights where the whole run put back step
6's. Each rank's checkpoint now keeps its slice of them (per-rank state, read back by the
same layout). The oracle is one process running the whole run (its weights are torch-checked
in round 30's tests): the same stopping step, best step and weights.

Round 41 (h9): the tp and pp runs (whole, cut, resumed) are now
``test_optimizer_split_r41h9.py``'s, which cuts them by SIGTERM with ``keep_best=2`` on top
and checks the same steps, best step and weights; this launch keeps the one-process run and
tp's checkpoint resumed by dp (9.8 -> 5.0 CPU s).
"""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
@pytest.mark.slow
def test_split_models_resume_early_stopping_with_the_best_weights(tmp_path):
    for res in run_mpi(2, "early_split_resume_r31_check.py", tmp_path, timeout=300):
        one = res["one"]  # one process, the whole run: the case this test is about
        assert (one["steps"], one["best_step"]) == (18, 6), one
        other = res["tp-then-dp"]  # tp's slices were loaded into dp's whole model: failed
        assert (other["steps"], other["best_step"]) == (18, 6), other

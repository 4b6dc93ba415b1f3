"""Round 35 (h5): the validation loss of a pipeline-parallel run is the model's.

The loop validates the model object whole on each rank, but under pp each rank steps only
its own stage: the other stages held their initial weights there, so ``val_history`` (and
early stopping, which watches it) was the loss of a half-trained model, other on each rank
(gpt-mini, 6 steps on ``sonnets``: 5.05 against one process's 4.35), while the training
losses matched. ``PipelineParallel.sync_for_evaluation`` gathers the stages first; a callback's
``trainer.evaluate()`` / ``predict()`` during the run is refused, naming why (a
collective there would wait for ever when called on rank 0 alone). The
oracle: the same run in one process (the training losses equal, as before)."""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi
from .scripts.one_launch import read_cases


@pytest.mark.mpi
@pytest.mark.slow
def test_pp_validates_the_trained_model(tmp_path):
    # one process (rank 0 alone) and pp in one launch (round 43 h5: two before)
    run_mpi(2, "pp_validation_r35h5_check.py", "single,pp", tmp_path, timeout=300)
    launched = read_cases(tmp_path)
    single, ranks = launched[0]["single"], [r["pp"] for r in launched]
    assert len(single["val_loss"]) == 3
    for got in ranks:
        assert got["loss"] == pytest.approx(single["loss"], rel=1e-6)
        # validation losses after 1, 2 and 3 steps (before: 1e-2 to 1e-1 off, per rank)
        assert got["val_loss"] == pytest.approx(single["val_loss"], rel=1e-6, abs=1e-7)
        # a callback's trainer.evaluate() / predict() during the run: refused, naming why
        # (they scored the stale stages; one process scores them)
        assert len(got["callback"]) == 6 and all(
            "holds only its own stage's current weights" in said and "val_dataset=" in said
            for said in got["callback"])
    assert all(isinstance(v, float) for v in single["callback"])
    # the evaluator's held-out loss of the one-process model is the validation loss's oracle
    # too (an independent numpy log-softmax of the model's logits)
    held = {e["step"]: e["held"] for e in single["evaluation"]}
    assert held[3] == pytest.approx(single["val_loss"][-1], rel=1e-5)

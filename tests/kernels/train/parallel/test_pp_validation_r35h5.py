"""Round 35 (h5): the validation loss of a pipeline-parallel run is the model's.

The loop validates the model object whole on each rank, but under pp each rank steps only
its own stage: the other stages held their initial weights there, so ``val_history`` (and
early stopping, which watches it) was the loss of a half-trained model, other on each rank
(gpt-mini, 6 steps on ``sonnets``: 5.05 against one process's 4.35), while the training
losses matched. ``PipelineParallel.sync_for_evaluation`` gathers the stages first, and an
``evaluator`` (refused under pp) gets the whole model on rank 0 the same way. The
oracle: the same run in one process (the training losses equal, as before)."""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
@pytest.mark.slow
def test_pp_validates_the_trained_model():
    single = run_mpi(1, "pp_validation_r35h5_check.py", "single", timeout=120)[0]
    ranks = run_mpi(2, "pp_validation_r35h5_check.py", "pp", timeout=240)
    assert len(single["val_loss"]) == 3
    for got in ranks:
        assert got["loss"] == pytest.approx(single["loss"], rel=1e-6)
        # validation losses after 1, 2 and 3 steps (before: 1e-2 to 1e-1 off, per rank)
        assert got["val_loss"] == pytest.approx(single["val_loss"], rel=1e-6, abs=1e-7)
    # an evaluator (--eval FILE's kind) runs on rank 0 with the whole model (it was refused:
    # "held-out evaluation needs the model whole on one rank")
    assert [e["step"] for e in single["evaluation"]] == [0, 2, 3]
    assert ranks[1]["evaluation"] == []
    for got, want in zip(ranks[0]["evaluation"], single["evaluation"], strict=True):
        assert got["step"] == want["step"]
        assert got["held"] == pytest.approx(want["held"], rel=1e-6)

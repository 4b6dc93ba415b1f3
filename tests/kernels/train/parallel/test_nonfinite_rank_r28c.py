"""Round 28: a non-finite loss on one rank only fails the step on every rank.

Before, the rank whose batch gave an inf loss raised before backward and the other rank
waited in the gradient all-reduce for ever (the job hung). Now the bad rank runs backward
too and the ranks agree on the step's losses before the optimizer step: both raise the same
TrainingDiverged, naming the step and the rank. The oracle is the same data on one process
(scripts/nonfinite_rank_r28c_check.py for the ranks): it diverges at the same step, and the
clean 2-rank run's losses are the one-process run's.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from .mpi_util import run_mpi

BAD_ROW, STEPS = 13, 8


def data(bad_row=None):  # the script's data
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
    if bad_row is not None:
        x[bad_row, 1] = 1e30
    return x, y


def _one_process(bad_row, **kw):
    import skiff
    from skiff.kernels.train.trainer import TrainingDiverged
    from skiff.nn import Linear, ReLU, Sequential

    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    trainer = skiff.Trainer(model, lr=0.01, batch_size=8, seed=0, **kw)
    try:
        with np.errstate(all="ignore"):
            result = trainer.train(data(bad_row), steps=STEPS)
    except TrainingDiverged as exc:
        return int(re.search(r"step (\d+)", str(exc)).group(1))
    return [h["loss"] for h in result.history]


@pytest.mark.mpi
def test_nonfinite_loss_on_one_rank_fails_both(tmp_path):
    results = run_mpi(2, "nonfinite_rank_r28c_check.py", str(BAD_ROW), timeout=90)
    clean = _one_process(None)
    assert results[0]["clean"]["steps"] == STEPS
    np.testing.assert_allclose(results[0]["clean"]["losses"], clean, rtol=1e-5)
    for case, kw in (("dp", {}), ("accum", {"grad_accum": 2}), ("zero2", {}),
                     ("fp16", {})):
        at = _one_process(BAD_ROW, **kw)
        assert isinstance(at, int), (case, at)  # one process diverges there too
        mine = [r[case] for r in results]
        assert "error" in mine[0], (case, mine[0])
        assert mine[0]["error"] == mine[1]["error"], case
        assert f"diverged at step {at}:" in mine[0]["error"], (case, at, mine[0])
        bad = re.findall(r"on rank (\d)", mine[0]["error"])
        assert len(bad) == 1 and "finite on the other ranks" in mine[0]["error"], mine[0]

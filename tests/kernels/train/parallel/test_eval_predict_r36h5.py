"""Round 36 (h5): an evaluator under pp, and ``predict`` after a tp run.

- ``Trainer(evaluator=...)`` (``--eval FILE``) under pp was refused ("pp holds one stage
  per rank"), though each rank's model object is whole and only its other stages are
  stale: ``PipelineParallel.evaluation_model`` now gathers the stages first (as round 35
  did for the validation loss), and the evaluator's rows equal one process's.
- ``trainer.predict(X)`` after a tp run of a GPT gave each rank its slice of the
  vocabulary: shape (5, 16, 128) for gpt-mini's 256, rank 1's columns 128..255 with no
  word; the ranks' slices are joined now (``Strategy.whole_outputs``).
- ``trainer.evaluate`` after a pp or tp run (checked: it was right) and ``predict`` after
  pp equal one process's.

The oracle: the same run in one process (a digest of the logits: shape, sums, a row across
both halves of the vocabulary), and a numpy cross-entropy of the predicted logits for the
evaluate figure."""

from __future__ import annotations

import numpy as np
import pytest

from .mpi_util import run_mpi
from .scripts.one_launch import read_cases

SCRIPT = "eval_predict_r36h5_check.py"


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    """One process (rank 0 alone), pp and tp in one launch (round 43 h5: three before)."""
    folder = tmp_path_factory.mktemp("eval_predict")
    run_mpi(2, SCRIPT, "single,pp,tp", folder, timeout=300)
    return read_cases(folder)


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["pp", "tp"])
def test_evaluator_and_predict_on_two_ranks_equal_one_process(launched, strategy):
    single = launched[0]["single"]
    assert single["shape"] == [5, 16, 256]
    # the scored loss is the cross-entropy of the predicted logits (numpy's, in the script)
    assert single["evaluate"] == pytest.approx(single["ce_of_predict"], rel=1e-5)
    for got in (r[strategy] for r in launched):
        assert got["loss"] == pytest.approx(single["loss"], rel=1e-6)
        assert got["shape"] == single["shape"]  # tp: (5, 16, 128), each rank its slice, before
        assert got["sum"] == pytest.approx(single["sum"], rel=1e-5)
        assert got["sq"] == pytest.approx(single["sq"], rel=1e-5)
        np.testing.assert_allclose(got["row"], single["row"], rtol=1e-4, atol=1e-5)
        assert got["evaluate"] == pytest.approx(single["evaluate"], rel=1e-6)
        if strategy == "pp":  # the evaluator's rows at steps 0, 2, 3 (before: refused)
            rows = got["evaluation"] if got["rank"] == 0 else []
            assert [r["step"] for r in rows] == ([0, 2, 3] if got["rank"] == 0 else [])
            for r, w in zip(rows, single["evaluation"]):
                assert r["logits_sum"] == pytest.approx(w["logits_sum"], rel=1e-5)
                assert r["logits_sq"] == pytest.approx(w["logits_sq"], rel=1e-6)

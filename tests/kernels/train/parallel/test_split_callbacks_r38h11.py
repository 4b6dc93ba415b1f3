"""Round 38 (h11) on 2 real ranks: a stateful callback (an EMA of the weights) on a model
split over the ranks (tp, pp, ep).

Round 38 (h5) kept a callback's ``state_dict()`` in the checkpoint where every rank holds
the whole model (dp, zero1, zero2); under tp, pp and ep it was not kept, so a run cut at step 5
and resumed ended with an EMA of 7 steps, not 12 (said in the log only). And the EMA could
not be made on a tp model at all: ``AveragedModel(model)`` deep-copies the model, whose
tensor-parallel layers hold their group's communicator: "cannot pickle 'module' object".
Each rank's state is now kept as its own (``PerRank``: back when the same layout on the same
world resumes), and a communicator's deep copy is itself.

Oracles: the uninterrupted run's EMA, bit for bit, on every rank; the one-process run's EMA
(a tiny GPT, 12 SGD steps) for the weights a tp rank holds whole (layer norms, and the
biases a row-parallel layer keeps on every rank), to float32 noise. A tp checkpoint resumed by
dp on the same world starts the EMA afresh (the slices are not dp's): 7 averaged steps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from .mpi_util import run_mpi


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ema_split")
    lines = run_mpi(2, "ema_split_r38h11_check.py", str(folder), "tp", "pp", "ep", timeout=300)
    return [json.loads(Path(line["file"]).read_text()) for line in lines]


@pytest.mark.mpi
@pytest.mark.parametrize("strategy", ["tp", "pp", "ep"])
def test_a_split_models_ema_is_the_whole_runs_after_a_resume(ranks, strategy):
    for got in ranks:
        whole, resumed = got[strategy]["whole"], got[strategy]["resumed"]
        assert whole["n_averaged"] == resumed["n_averaged"] == 12
        assert sorted(whole) == sorted(resumed)
        for k, v in whole.items():
            np.testing.assert_array_equal(resumed[k], v, err_msg=k)


@pytest.mark.mpi
def test_a_tp_ema_equals_one_process_where_a_rank_holds_the_weight_whole(ranks):
    one = ranks[0]["single"]
    tp = ranks[0]["tp"]["whole"]
    same = [k for k in one if k != "n_averaged" and np.shape(one[k]) == np.shape(tp[k])]
    assert any("ln_1" in k for k in same) and len(same) >= 6, same
    for got in ranks:
        for k in same:
            np.testing.assert_allclose(got["tp"]["whole"][k], one[k], rtol=1e-5, atol=1e-6,
                                       err_msg=k)


@pytest.mark.mpi
def test_a_tp_checkpoint_resumed_by_dp_starts_the_ema_afresh(ranks):
    assert [got["tp-then-dp"] for got in ranks] == [7.0, 7.0]

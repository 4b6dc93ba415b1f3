"""Round 29b: a GPT trained under pp or tp on 2 ranks, saved for one-process inference.

Found as a user (a GPT of their own size, 3 SGD steps): under pp rank 0's
``trainer.model.save()`` wrote the later stage's initial weights (each rank steps only its
stage's parameters): the head 9e-3 off the one-process run, and the file loaded into one
process without a word. Now every rank's model takes every stage's trained weights when
``train`` ends. Under tp rank 0 wrote its shard (25 of 50 vocabulary rows), which one
process failed to load: a split GPT's ``save`` now refuses naming the way,
``trainer.whole_state_dict()`` on every rank. Oracle: the one-process run (its weights; pp
and tp equal one device to 1e-5 in the round 26 tests) and the file loaded into a
one-process GPT giving its logits.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import split_save_r29b_check as check  # noqa: E402


@pytest.mark.mpi
def test_pp_and_tp_runs_save_the_whole_trained_model(tmp_path):
    import json

    from skiff.kernels.train.core.tensor import no_grad

    results = [json.loads(open(r["file"], encoding="utf-8").read()) for r in
               run_mpi(2, "split_save_r29b_check.py", str(tmp_path), timeout=200)]
    one = check.train("single").model
    want = one.state_dict()
    for r in results:
        for case in ("pp", "tp"):
            assert set(r[case]) == set(want), case
            for k, v in want.items():
                np.testing.assert_allclose(np.asarray(r[case][k]), v, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{case} {k} (rank {r['rank']})")
        assert r["tp_save_error"] and "whole_state_dict" in r["tp_save_error"]
    fresh = check.trainer("single").model
    fresh.load_state_dict(str(tmp_path / "tp.npz"))
    x = check.tokens()[:4, :-1]
    with no_grad():
        np.testing.assert_allclose(np.asarray(fresh(x)._data), np.asarray(one(x)._data),
                                   rtol=1e-4, atol=1e-5)

"""Pipeline parallel GPT on a 1F1B schedule (pp=2, and dp=2 x pp=2) against one process.

fp32 tolerance: losses and final weights within 1e-5 after 3 SGD steps of 4 micro-batches."""

from __future__ import annotations

import pytest

from skiff.kernels.train.parallel.pipeline import partition, schedule_1f1b

from .mpi_util import run_mpi

TOL = 1e-5


def test_partition_minimizes_the_slowest_stage():
    assert partition([1, 1, 1, 1], 2) == [(0, 2), (2, 4)]
    assert partition([5, 1, 1, 1, 1, 1], 2) == [(0, 1), (1, 6)]
    # brute force over every cut of 6 units into 3 stages
    costs = [3, 1, 4, 1, 5, 9]
    best = min(max(sum(costs[:i]), sum(costs[i:j]), sum(costs[j:]))
               for i in range(1, 5) for j in range(i + 1, 6))
    got = partition(costs, 3)
    assert max(sum(costs[a:b]) for a, b in got) == best
    with pytest.raises(ValueError, match="cannot cut 2 units into 3"):
        partition([1, 1], 3)


def test_1f1b_schedule():
    # last stage alternates from the start; first stage warms up with pp-1 forwards
    assert schedule_1f1b(1, 2, 3) == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2),
                                      ("B", 2)]
    s0 = schedule_1f1b(0, 3, 4)
    assert s0[:2] == [("F", 0), ("F", 1)]
    for stage in range(3):
        order = schedule_1f1b(stage, 3, 4)
        assert sorted(order) == sorted([("F", i) for i in range(4)] +
                                       [("B", i) for i in range(4)])
        # a backward never comes before its forward, and at most pp - stage are in flight
        live, peak = set(), 0
        for kind, i in order:
            if kind == "F":
                live.add(i)
            else:
                assert i in live
                live.remove(i)
            peak = max(peak, len(live))
        assert peak <= 3 - stage


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("dp,pp", [(1, 2), (2, 2)])
def test_pipeline_gpt_equals_one_process(dp, pp):
    results = run_mpi(dp * pp, "pp_check.py", dp, pp, 3, 4 // dp, timeout=120)
    for res in results:
        assert res["loss_diff"] < TOL, res
        assert res["weight_diff"] < TOL, res
        assert res["peak_in_flight"] <= pp - res["stage"]
        if dp == 1:  # a float64 model (same launch): float64 through the stages, to 1e-12
            # (the received activations were made float32: stage 2 refused float != double)
            assert res["f64_dtypes"] == res["f64_ref_dtypes"] == ["float64"], res
            assert res["f64_loss_diff"] < 1e-12, res
            assert res["f64_weight_diff"] < 1e-12, res
    assert {tuple(map(tuple, r["stages"])) for r in results} == {tuple(map(tuple,
                                                                          results[0]["stages"]))}

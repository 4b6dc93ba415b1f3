"""Round 31: the ranks of a job plan with one matmul rate, rank 0's. Each measured its own
(``plan.measure_flops``), so on a loaded host 2 ranks of one gpt-mini job predicted 0.0644
and 0.0618 s a step: a choice that close could differ between the ranks, whose collectives
would then not match. Here rank 1 measures a machine 10^4 times slower; the oracle is rank
0's own plan (the same choice, predicted step time and rate on both ranks)."""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
def test_every_rank_plans_with_rank_0s_rate():
    got = sorted(run_mpi(2, "plan_flops_r31b_check.py", timeout=180), key=lambda r: r["rank"])
    assert [r["rank"] for r in got] == [0, 1]
    a, b = got
    assert a["flops"] == b["flops"]
    assert a["step_time"] == b["step_time"]
    assert a["label"] == b["label"]
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-6)

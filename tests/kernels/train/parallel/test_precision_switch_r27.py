"""A fp16-mixed checkpoint of 2 ranks (dp, ZeRO-2) resumed in float32 or bf16-mixed, by the
same or the other strategy, takes the stopped run's float32 masters exactly (the oracle:
the masters that run held, gathered; they differ from their float16 rounding). A float32 run
took the float16 weights, and a switch between fp16 and bf16 was refused."""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
def test_two_rank_fp16_checkpoint_resumed_in_float32_or_bf16():
    for res in run_mpi(2, "precision_switch_r27_check.py", timeout=240):
        cases = [k for k in res if k != "rank"]
        assert len(cases) == 4
        for case in cases:
            assert res[case]["rounding_differs"], case
            assert res[case]["exact"], case

"""Mixed precision with data parallel, ZeRO-1/2, tensor and pipeline parallel on 2 real MPI
ranks, each against the same Trainer on one device in the same precision (itself checked
against ``torch.autocast`` in ``tests/kernels/train/trainer/test_precision.py``)."""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi

CASES = ["dp:fp16-mixed", "zero1:bf16-mixed", "zero2:fp16-mixed", "zero2:bf16-mixed",
         "tp:bf16-mixed", "tp:fp16-mixed", "pp:bf16-mixed", "pp:fp16-mixed"]
SKIPS = ["zero1:skip", "zero2:skip", "tp:skip", "pp:skip"]
RESUMES = ["zero2:resume", "tp:resume", "pp:resume"]
SWITCHES = ["zero2:switch", "tp:switch"]


@pytest.mark.mpi
def test_mixed_precision_on_two_ranks_equals_one_device():
    """Same losses (to 16-bit rounding), the same fp16 steps skipped (the MLP data hold one
    huge sample whose gradients overflow on one rank), float32 masters equal to 5e-4 (a
    local overflow check or a local clipping norm moves them by ~2e-3); and an inf in rank
    1's gradients alone makes every rank skip the step without moving its masters; and a
    run stopped and resumed from its checkpoint (masters as ZeRO's flat shards or as the
    split model's pieces, the loss scaler) ends exactly where an unstopped one does; a
    float32 checkpoint resumed in bf16-mixed gives the masters its float32 weights."""
    for res in run_mpi(2, "mixed_check.py", *CASES, *SKIPS, *RESUMES, *SWITCHES,
                       timeout=180):
        for case in CASES:
            r = res[case]
            assert r["skipped"] == r["ref_skipped"], (case, r)
            assert r["loss_diff"] < 1e-2, (case, r)
            assert r["master_diff"] < 5e-4, (case, r)
        for case in SKIPS:
            assert res[case] == {"ran": False, "moved": False}, (case, res[case])
        for case in RESUMES + SWITCHES:
            assert res[case]["exact"], case

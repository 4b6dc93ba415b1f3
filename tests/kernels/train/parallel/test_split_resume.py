"""A run stopped under dp or ZeRO resumes under tp or pp with its AdamW moments, and mixed
precision's float32 masters move between dp, ZeRO, tp and one process.

Found by a user moving a stopped run between layouts: a ZeRO (or dp) checkpoint resumed
under tp or pp started Adam's moments afresh (a warning said so; gpt-mini ended 8.7e-4 off
the unstopped run in its weights and 8e-4 in its last loss, against 1.6e-5 and 1e-7 now);
a dp checkpoint of a mixed-precision run resumed as ZeRO (or the reverse, or on one process)
failed "could not broadcast input array from shape (41,) into shape (16, 3)"; and no
bf16-mixed run could resume at all, even on one process: npz stores bfloat16 as raw bytes
that "No cast function available" turns back into nothing.
The oracles: one device that never stopped (float32, AdamW; a GPT without biases, since
Adam turns rounding noise of the key bias's zero gradient into full steps in any layout,
1e-3 here), and for bf16 the masters the stopped run held (exactly).
"""

from __future__ import annotations

import pytest

from .mpi_util import run_mpi


@pytest.mark.mpi
def test_moments_and_masters_carry_over_between_layouts(tmp_path):
    results = run_mpi(2, "split_resume_check.py", str(tmp_path), timeout=200)
    for res in results:
        for case in ("zero2->tp", "zero1->pp", "dp->tp"):
            got = res["32"][case]
            assert got["resumed"] in (3, 4) and got["steps"] == 8, (case, got)
            assert not got["afresh"], (case, got)
            assert got["loss"] < 1e-5, (case, got)
            assert got["weights"] < 5e-5, (case, got)  # moments afresh: ~1e-2 (lr)
        cases = ["zero2->dp", "dp->zero1", "zero2->tp"] + (["zero2->one"]
                                                          if res["rank"] == 0 else [])
        assert sorted(res["bf16"]) == sorted(cases), res["bf16"]
        for case in cases:
            got = res["bf16"][case]
            assert got["names"] and got["masters"] == 0.0, (case, got)

"""A run stopped on 2 ranks resumes on one process, and the reverse; dp and ZeRO resume
each other's checkpoints.

Found by a user moving a run between 1 and 2 ranks with ``--resume``: a one-process
checkpoint (``step-N.npz``) was invisible to 2 ranks and a 2-rank one (``step-N/``) to one
process, so the resumed run said "no checkpoint" and trained from step 0; ZeRO resumed with
dp (or dp with ZeRO) failed with "optimizer state does not fit: groups of sizes [1] vs [6]".
The oracle is the same Trainer on one device that never stopped (AdamW: the moments must
carry over for the weights to agree).
"""

from __future__ import annotations

from .mpi_util import run_mpi


def test_resume_across_ranks_and_layouts_ends_as_one_device(tmp_path):
    results = run_mpi(2, "relayout_check.py", str(tmp_path), timeout=200)
    for res in results:
        cases = ["zero2->dp", "one->zero1"] + (["zero2->one"] if res["rank"] == 0 else [])
        for case in cases:
            got = res[case]
            assert got["resumed"] in (3, 4), (case, got)  # 2 ranks agree a step later
            assert got["steps"] == 8, (case, got)
            assert got["loss"] < 2e-6, (case, got)
            assert got["weights"] < 2e-6, (case, got)

"""Round 28: a LoRA fine-tune on 2 ranks (dp and zero2) writes checkpoints without its
frozen base and resumes from them exactly. The oracle is the same 2-rank run that never
stopped: equal losses, equal adapters; the newest checkpoint (both ranks' files) is smaller
than the base's weights alone, which a checkpoint holding the base could not be."""

from __future__ import annotations

import pytest

from ..models.ernie_reference import make_checkpoint
from .mpi_util import run_mpi


@pytest.mark.mpi
def test_lora_on_two_ranks_resumes_from_adapters_only(tmp_path):
    make_checkpoint(tmp_path / "base", "dense-gqa-tied")
    results = run_mpi(2, "lora_ckpt_r28b_check.py", str(tmp_path / "base"),
                      str(tmp_path / "runs"), timeout=200)
    for res in results:
        for strategy in ("dp", "zero2"):
            got = res[strategy]
            assert got["resumed"] == 2, (strategy, got)
            assert got["got"] == got["want"], (strategy, got)
            assert got["weights"] == 0.0, (strategy, got)
            assert got["bytes"] < got["base_bytes"], (strategy, got)

"""Round 29: a GPT MoE under expert parallelism checkpoints every rank's experts.

Found as a user: its checkpoints went through data parallel's writer, whose model state rank
0 writes alone, so they held rank 0's local experts only (experts 0-1 of 4, rank 1's shard
empty). Resumed on 2 ranks, rank 1 took rank 0's experts under its own: after 2 more steps
the loss was 4.37742 against 4.37908 uninterrupted; resumed on one process it failed
("missing keys: h.0.mlp.moe.experts.2.fc.weight ..."). Now each rank writes its experts under
their single-device names (the pieces ERNIE's ep writes). Oracles: the uninterrupted 2-rank
run (the same losses), and one process resumed from the same checkpoint and one process
uninterrupted (round 28: ep equals one process to 1e-7).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import moe_ckpt_r29_check as check  # noqa: E402


@pytest.mark.mpi
def test_expert_parallel_gpt_moe_resumes_with_every_rank_s_experts(tmp_path):
    results = run_mpi(2, "moe_ckpt_r29_check.py", str(tmp_path), timeout=200)
    one_whole, _ = check.run("single", tmp_path / "one_whole", 4)
    one_resumed, from_step = check.run("single", tmp_path / "copy", 4, resume=True)
    assert from_step == 2
    np.testing.assert_allclose(one_resumed, one_whole, rtol=1e-6)
    for r in results:
        assert r["from_step"] == 2
        np.testing.assert_allclose(r["resumed"], r["whole"], rtol=1e-6)
        np.testing.assert_allclose(r["whole"], one_whole, rtol=1e-6)

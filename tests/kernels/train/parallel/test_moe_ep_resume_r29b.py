"""Round 29b: a whole model's checkpoint (dp, ZeRO-2, one process) resumed under ep keeps
the optimizer's moments, cut per expert.

Found as a user: a GPT MoE trained 2 steps under dp (or zero2, or one process) and resumed
on 2 ranks with strategy "ep" started the moments afresh: its 4th loss was 4.378917 against
4.379210 uninterrupted. Each rank now takes the moments of the dense parameters and of its
own experts by their single-device names (ZeRO's flat slices gathered first). Oracles: the
uninterrupted ep run and one process uninterrupted (round 28: ep equals one process to
1e-7), whose losses the resumed runs must give.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import moe_ckpt_r29_check as check  # noqa: E402


@pytest.mark.mpi
def test_whole_model_checkpoints_resume_under_ep_with_their_moments(tmp_path):
    one, _ = check.run("single", tmp_path / "one_whole", 4)
    check.run("single", tmp_path / "single", 2)
    results = run_mpi(2, "moe_ep_resume_r29b_check.py", str(tmp_path), timeout=300)
    for r in results:
        np.testing.assert_allclose(r["whole"], one, rtol=1e-6)
        for kind in ("dp", "zero2", "single"):
            assert r[kind]["from_step"] == 2, kind
            np.testing.assert_allclose(r[kind]["losses"], one, rtol=1e-6, err_msg=kind)

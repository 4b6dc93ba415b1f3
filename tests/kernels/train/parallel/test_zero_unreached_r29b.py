"""Round 29b: ZeRO-1/2 do not step a parameter that no rank reached in a step.

Found as a user: ZeRO's optimizer sees one flat slice of all parameters with one gradient,
so a layer the model never calls got zeros and AdamW decayed it and moved its moments
(3.6e-4 off one process after 8 AdamW steps), and a branch that no rank's rows took in a
step was stepped with a zero gradient and kept the run's step count for Adam's bias
correction. The oracle is torch: DDP's rule (``find_unused_parameters=True``) done by hand in
one process with torch's AdamW, whose per-parameter state skips a parameter of grad None
(as ``ZeroRedundancyOptimizer``'s per-parameter local optimizer does).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi
from .test_unused_params_r29 import _torch_ddp_by_hand

sys.path.insert(0, str(HERE / "scripts"))
import unused_params_r29_check as check  # noqa: E402

torch = pytest.importorskip("torch")


def _steps_no_rank_took_the_branch(grad_accum):
    """The steps in which neither rank's rows summed above zero (side got no gradient)."""
    x, _ = check.arrays()
    skipped, batch = [], 0
    for step in range(check.STEPS):
        took = False
        for _ in range(grad_accum):
            start = batch * check.BATCH
            batch += 1
            took |= any(float(x[list(range(start + r, start + check.BATCH, 2))].sum()) > 0
                        for r in range(2))
        if not took:
            skipped.append(step)
    return skipped


@pytest.fixture(scope="module")
def results():
    """One launch for both tests: the script runs every case (round 39: each test launched
    it, the same run twice)."""
    return run_mpi(2, "zero_unreached_r29b_check.py", timeout=150)


@pytest.mark.mpi
def test_zero_skips_unreached_parameters_as_torch(results):
    # the case must test the step counts: some step (not the last) leaves the branch out
    assert [s for s in _steps_no_rank_took_the_branch(1) if s < check.STEPS - 1]
    for case in ("zero1", "zero1_small", "zero2", "zero2_small", "zero2_accum"):
        accum = 2 if case.endswith("accum") else 1
        losses, weights = _torch_ddp_by_hand(accum)
        for r in results:
            got = r[case]
            np.testing.assert_allclose(got["losses"], losses, rtol=1e-5, err_msg=case)
            for k, v in weights.items():
                np.testing.assert_allclose(np.asarray(got["weights"][k]), v, rtol=1e-5,
                                           atol=1e-6, err_msg=f"{case} {k}")


@pytest.mark.mpi
def test_zero_bf16_masters_of_an_unreached_layer_stay_as_torch(results):
    """bf16-mixed ZeRO-2 steps the float32 masters through mixed precision's own step: the
    never-used layer's masters must stay its float32 initial weights, as torch's autocast
    (float32 parameters, grad None: not stepped, not decayed) keeps them; a decayed one is
    6e-4 smaller after 6 steps."""
    import skiff

    skiff.seed(0)
    first = check.Branchy().state_dict()
    for r in results:
        for name in ("extra.weight", "extra.bias"):
            want = torch.tensor(np.asarray(first[name], np.float32)).numpy().reshape(-1)
            np.testing.assert_array_equal(np.asarray(r["bf16"][name], np.float32), want,
                                          err_msg=name)

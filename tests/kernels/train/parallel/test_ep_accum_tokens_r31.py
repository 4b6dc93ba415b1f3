"""Round 31: expert parallelism accumulates a token loss as one big batch, as dp does.

Round 30 left ep at ``loss / grad_accum`` because weighting its micro-batches by their scored
targets broke the experts' all-to-all on a rank's stand-in row. The cause: the window's
factors were numpy float64 scalars, and ``loss * np.float64(s)`` is float64 under NumPy 2's
promotion, so that rank's backward (and the gradient rows its all-to-all sent) was float64
while its peer's was float32: MPI's Alltoallv failed on the byte counts. The factors are
Python floats now (and dp's backward of a token loss is float32 again).

Oracles: the step's loss of one device is checked against numpy's cross-entropy over the
window's scored targets (its logits taken before the step), and the 2 ranks' losses and
weights against that one device (the routing spans the ranks' whole batch): 4.5e-8 of the
loss, 6e-8 of the weights (aux_coef 0), where the old ``1 / grad_accum`` rule was 5.6% and
0.117 off (the one-device test asserts the two rules differ by more than 5%).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))


def _check():
    import ep_accum_tokens_r31_check as check

    return check


def _ce_sum(logits, y):
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    keep = y != -100
    return -float(logp[keep, y[keep]].sum()), int(keep.sum())


def test_one_device_step_is_the_windows_token_mean():
    check = _check()
    import skiff
    from skiff.kernels.train.parallel.moe import gpt_moe

    x, y = check.data()
    skiff.seed(0)
    model = gpt_moe(block_size=check.T, capacity_factor=4.0, aux_coef=0.0)
    model.eval()  # no dropout: the forward the step runs
    logits = np.asarray(model(x[:8]).numpy(), dtype=np.float64)
    total, n = _ce_sum(logits, y[:8])
    losses, _ = check.run("single", 1, 0.0, steps=1)
    np.testing.assert_allclose(losses[0], total / n, rtol=1e-5)
    # the old rule (each micro-batch's mean times 1/2) differs, so the 2-rank check can fail
    a, na = _ce_sum(logits[:4], y[:4])
    b, nb = _ce_sum(logits[4:], y[4:8])
    assert abs((a / na + b / nb) / 2 - total / n) > 0.05 * total / n


@pytest.mark.mpi
def test_expert_parallel_token_accumulation_equals_one_device():
    got = run_mpi(2, "ep_accum_tokens_r31_check.py", "ep", timeout=240)
    for aux in ("0.0", "0.01"):
        for r in got:
            mine = r[aux]
            assert len(mine["losses"]) == len(mine["ref_losses"]) == 4
            # the balancing term is weighted by each rank's scored targets, one device's by
            # the micro-batch's (2e-6 of the loss at aux_coef 0.01; the old rule: 5.6%)
            tol = 1e-6 if aux == "0.0" else 1e-5
            np.testing.assert_allclose(mine["losses"], mine["ref_losses"], rtol=tol,
                                       err_msg=aux)
            assert mine["weights"] < 10 * tol, (aux, mine["weights"])

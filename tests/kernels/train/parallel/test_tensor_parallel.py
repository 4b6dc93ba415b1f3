"""Tensor parallel GPT (tp=2, and dp=2 x tp=2) against the single-device GPT.

fp32 tolerance: losses within 1e-5 and gathered weights within 1e-5 after 3 SGD steps (SGD,
not AdamW: Adam turns the rounding noise of gradients that are zero in exact arithmetic,
like the key bias of attention, into full-size steps, in either implementation)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.core.tensor import Tensor
from skiff.kernels.train.parallel import SelfComm
from skiff.kernels.train.parallel.tensor_parallel import vocab_parallel_cross_entropy

from .mpi_util import run_mpi

TOL = 1e-5


def test_vocab_parallel_cross_entropy_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 11)).astype(np.float32)
    target = np.array([0, 3, 10, -100, 5, 5])
    x = Tensor(logits, requires_grad=True)
    loss = vocab_parallel_cross_entropy(x, target, SelfComm(), 0)
    loss.backward()
    tx = torch.tensor(logits, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(target), ignore_index=-100)
    tl.backward()
    assert abs(float(loss.item()) - tl.item()) < 1e-6
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), atol=1e-6)


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("dp,tp", [(1, 2), (2, 2)])
def test_tensor_parallel_gpt_equals_one_process(dp, tp):
    for res in run_mpi(dp * tp, "tp_check.py", dp, tp, 3, timeout=120):
        assert res["keys_equal"]
        assert res["loss_diff"] < TOL, res
        assert res["weight_diff"] < TOL, res
        if dp == 1:  # a float64 model (same launch) stays float64 over the tp ranks, to 1e-12
            assert res["f64_dtypes"] == res["f64_ref_dtypes"] == ["float64"], res
            assert res["f64_loss_diff"] < 1e-12, res
            assert res["f64_weight_diff"] < 1e-12, res

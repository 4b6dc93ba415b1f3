"""Round 36 (h5): one rule for class weights over micro-batches and ranks.

With ``class_weight`` (torch's ``CrossEntropyLoss(weight=w)``, whose mean divides by the
batch's target weights) a step over several parts of a batch, micro-batches of
``grad_accum`` or the ranks of dp, is the mean of each part's weighted mean: torch's
accumulation loop (``loss / accum`` per micro-batch) and DDP (each rank's weighted mean,
the gradients averaged) both do this, and so does their product (DDP with ``no_sync``
accumulation). It is not one weighted mean over the whole window (the weights are 0.06
apart after 6 SGD steps), as a token loss is weighed (transformers' rule, trainer_accum).

The oracle: one torch 2.13 float64 loop that takes each step as the mean of the parts'
weighted means, the parts cut as skiff's loader and dp cut them (the epoch's permutation,
``batch_size`` rows per micro-batch, rank ``r`` taking rows ``r::ranks`` of it)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import class_weight_accum_r36h5_check as check  # noqa: E402

SCRIPT = "class_weight_accum_r36h5_check.py"


def _torch_loop(ranks: int, accum: int, whole_window: bool = False):
    x, y = check.data()
    weight = torch.tensor(len(y) / (3 * np.bincount(y)))  # scikit-learn's "balanced"
    start = check.model().state_dict()
    twin = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 3)).double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=check.LR, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss(weight=weight)
    losses = []
    for epoch in range(check.EPOCHS):
        order = np.random.default_rng([check.SEED, epoch]).permutation(len(x))
        window = check.BATCH * accum
        for i in range(0, len(x), window):
            micro = [order[j:j + check.BATCH] for j in range(i, i + window, check.BATCH)]
            parts = [m[r::ranks] for m in micro for r in range(ranks)]
            if whole_window:
                parts = [np.concatenate(parts)]
            loss = sum(crit(twin(torch.tensor(x[p], dtype=torch.float64)), torch.tensor(y[p]))
                       for p in parts) / len(parts)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in twin.state_dict().items()}


def _check(got, ranks, accum):
    losses, w = _torch_loop(ranks, accum)
    assert len(got["losses"]) == len(losses)
    np.testing.assert_allclose(got["losses"], losses, rtol=2e-5, atol=2e-6)
    for k, v in w.items():
        np.testing.assert_allclose(np.asarray(got["w"][k]), v, atol=2e-5)


def test_grad_accum_is_torchs_accumulation_loop_not_one_weighted_batch():
    got = check.main("single", 2)
    _check(got, 1, 2)
    # one weighted mean over the window's 16 rows would be another run (the oracle can tell)
    _, whole = _torch_loop(1, 2, whole_window=True)
    assert max(np.abs(np.asarray(got["w"][k]) - v).max() for k, v in whole.items()) > 1e-3


@pytest.mark.mpi
def test_dp_on_two_ranks_with_grad_accum_is_ddp_with_no_sync_accumulation():
    """4 parts a step (2 micro-batches of 8 rows, 4 on each rank); without grad_accum:
    test_class_weight_dp_r30.py."""
    for got in run_mpi(2, SCRIPT, "dp", "2", timeout=150):
        _check(got, 2, 2)

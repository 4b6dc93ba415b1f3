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

import json
import sys

import numpy as np
import pytest
import torch

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import class_weight_accum_r36h5_check as check  # noqa: E402
import class_weight_dp_r30_check as check30  # noqa: E402

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


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    """dp with grad_accum=2 and round 30's dp case in one launch (round 43 h5: two)."""
    folder = tmp_path_factory.mktemp("class_weight")
    run_mpi(2, SCRIPT, "dp", "2", folder, timeout=200)
    return [json.loads((folder / f"rank{r}.json").read_text()) for r in (0, 1)]


@pytest.mark.mpi
def test_dp_on_two_ranks_with_grad_accum_is_ddp_with_no_sync_accumulation(launched):
    """4 parts a step (2 micro-batches of 8 rows, 4 on each rank); without grad_accum:
    test_balanced_class_weights_on_two_ranks_equal_ddp."""
    for got in (r["accum"] for r in launched):
        _check(got, 2, 2)


def _ddp_by_hand():
    x, y = check30.data()
    weight = len(y) / (3 * np.bincount(y))  # scikit-learn's "balanced", from its definition
    start = check30.model().state_dict()
    twin = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    twin = twin.double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=check30.LR, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight))
    losses = []
    for epoch in range(check30.EPOCHS):
        order = np.random.default_rng([check30.SEED, epoch]).permutation(len(x))
        for i in range(0, len(x), check30.BATCH):
            glob = order[i:i + check30.BATCH]
            per_rank = [crit(twin(torch.tensor(x[glob[r::2]], dtype=torch.float64)),
                             torch.tensor(y[glob[r::2]])) for r in (0, 1)]
            loss = (per_rank[0] + per_rank[1]) / 2  # DDP: the ranks' gradients averaged
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return weight, losses, {k: v.detach().numpy() for k, v in twin.state_dict().items()}



@pytest.mark.mpi
def test_balanced_class_weights_on_two_ranks_equal_ddp(launched):
    """Round 30 (moved here from ``test_class_weight_dp_r30.py`` by round 43 h5, its run in
    this file's launch): ``class_weight="balanced"`` on 2 ranks (dp) trains as torch's DDP
    does with ``CrossEntropyLoss(weight=...)``: each rank's weighted mean over its half of
    the batch, the gradients averaged, the weights counted over the whole training set;
    each rank's validation (the weighted loss, the confusion matrix) equals torch's."""
    got = [r["r30"] for r in launched]
    weight, losses, w = _ddp_by_hand()
    for r in got:
        np.testing.assert_allclose([r["weights"][str(c)] for c in range(3)], weight,
                                   rtol=1e-12)
        np.testing.assert_allclose(r["losses"], losses, rtol=2e-5, atol=2e-6)
        for k, v in w.items():
            np.testing.assert_allclose(np.asarray(r["w"][k]), v, atol=2e-5)
        # validation on every rank: the weighted loss and the class counts of torch's weights
        xv, yv = check30.data(seed=7, n=40)
        twin = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 3)).double()
        twin.load_state_dict({k: torch.tensor(v) for k, v in w.items()})
        crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight))
        with torch.no_grad():
            out = twin(torch.tensor(xv, dtype=torch.float64))
            val = crit(out, torch.tensor(yv)).item()  # torch's over the whole held-out set
        np.testing.assert_allclose(r["val_loss"], val, rtol=2e-5)
        conf = np.zeros((3, 3), np.int64)
        np.add.at(conf, (yv, out.argmax(-1).numpy()), 1)
        np.testing.assert_array_equal(np.asarray(r["class_metrics"]["confusion"]), conf)

"""Round 30: ``class_weight="balanced"`` on 2 ranks (dp) trains as torch's DDP does with
``CrossEntropyLoss(weight=...)``: each rank's weighted mean over its half of the batch, the
gradients averaged (DDP's rule done by hand in one torch 2.13 process), with the weights
counted over the whole training set (every rank holds it). Each rank's validation (the
weighted loss, and ``result.class_metrics``' confusion matrix) equals torch's on those
weights."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import class_weight_dp_r30_check as check  # noqa: E402


def _ddp_by_hand():
    x, y = check.data()
    weight = len(y) / (3 * np.bincount(y))  # scikit-learn's "balanced", from its definition
    start = check.model().state_dict()
    twin = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    twin = twin.double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=check.LR, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight))
    losses = []
    for epoch in range(check.EPOCHS):
        order = np.random.default_rng([check.SEED, epoch]).permutation(len(x))
        for i in range(0, len(x), check.BATCH):
            glob = order[i:i + check.BATCH]
            per_rank = [crit(twin(torch.tensor(x[glob[r::2]], dtype=torch.float64)),
                             torch.tensor(y[glob[r::2]])) for r in (0, 1)]
            loss = (per_rank[0] + per_rank[1]) / 2  # DDP: the ranks' gradients averaged
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return weight, losses, {k: v.detach().numpy() for k, v in twin.state_dict().items()}


@pytest.mark.mpi
def test_balanced_class_weights_on_two_ranks_equal_ddp():
    got = run_mpi(2, "class_weight_dp_r30_check.py", timeout=150)
    weight, losses, w = _ddp_by_hand()
    for r in got:
        np.testing.assert_allclose([r["weights"][str(c)] for c in range(3)], weight,
                                   rtol=1e-12)
        np.testing.assert_allclose(r["losses"], losses, rtol=2e-5, atol=2e-6)
        for k, v in w.items():
            np.testing.assert_allclose(np.asarray(r["w"][k]), v, atol=2e-5)
        # validation on every rank: the weighted loss and the class counts of torch's weights
        xv, yv = check.data(seed=7, n=40)
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

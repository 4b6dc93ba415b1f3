"""BatchNorm on 2 data-parallel ranks: the losses are torch ``DistributedDataParallel``'s
(each rank normalises its own rows) and the running statistics are the same on every rank.

Found by a user: after ``Trainer(cnn, strategy="auto")`` on 2 ranks the ranks held different
running means and variances (each folded in its own rows), so ``predict`` on rank 1 differed
from rank 0 (0.1157 against 0.1202 on one output). They are now averaged over the ranks
after each step (weighted by rows). The oracle is torch running each rank's rows from the
same state, its loss and gradient the ranks' mean, its running statistics the mean of the
ranks' updates.
"""

from __future__ import annotations

import copy
import sys

import numpy as np
import pytest

from .mpi_util import HERE, run_mpi

torch = pytest.importorskip("torch")
T = torch.nn
sys.path.insert(0, str(HERE / "scripts"))
import bn_check as check  # noqa: E402


def torch_ddp(init, x, y, batch, ranks=2, lr=1e-2):
    """Each rank's rows (``r::ranks`` of a batch, as the loader shards) through the model
    from the same state; loss and gradient the ranks' mean; running statistics the mean of
    the ranks' updates."""
    model = T.Sequential(T.Conv2d(1, 4, 3, bias=False), T.BatchNorm2d(4), T.ReLU(),
                         T.MaxPool2d(2), T.Flatten(), T.Linear(36, 2)).double()
    model.load_state_dict({k: torch.tensor(np.asarray(v, np.float64))
                           for k, v in init.items()}, strict=False)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    for s in range(0, len(x), batch):
        xb = torch.tensor(x[s:s + batch], dtype=torch.float64)
        yb = torch.tensor(y[s:s + batch])
        opt.zero_grad()
        start = copy.deepcopy(model[1].state_dict())
        stats, total = [], 0.0
        for r in range(ranks):
            model[1].load_state_dict(start)
            loss = T.functional.cross_entropy(model(xb[r::ranks]), yb[r::ranks]) / ranks
            loss.backward()
            total += loss.item()
            stats.append({k: v.clone() for k, v in model[1].state_dict().items()})
        model[1].load_state_dict({k: (sum(st[k] for st in stats) / ranks
                                      if k != "num_batches_tracked" else stats[0][k])
                                  for k in start})
        opt.step()
        losses.append(total)
    bn = model[1]
    return losses, bn.running_mean.numpy(), bn.running_var.numpy()


@pytest.mark.mpi
def test_batchnorm_statistics_agree_over_ranks_and_with_torch_ddp():
    results = run_mpi(2, "bn_check.py", timeout=120)
    x, y = check.data()
    for res in results:
        want, mean, var = torch_ddp(res["init"], np.concatenate([x, x]),
                                    np.concatenate([y, y]), 16)
        got = res["losses"]
        assert res["world"] == 2 and len(got) == len(want) == 4, res["world"]
        assert max(abs(a - b) / abs(b) for a, b in zip(got, want)) < 1e-5, (got, want)
        assert np.abs(np.asarray(res["running_mean"]) - mean).max() < 1e-5
        assert np.abs(np.asarray(res["running_var"]) - var).max() < 1e-5
    assert results[0]["predict"] == results[1]["predict"]

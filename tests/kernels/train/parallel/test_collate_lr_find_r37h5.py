"""Round 37 (h5): a DataLoader's padding ``collate_fn`` on 2 dp ranks, and ``lr_find`` on 2.

A padding collate (round 36, one process) under dp: each rank collates its own share of
the batch, padded to its own longest sequence, as each rank's DataLoader does under torch's
DDP (``DistributedSampler``). The oracle: a torch 2.13 float64 loop that collates each
rank's share (the global batch's items ``r::2``) with the same function and averages the
ranks' losses; padding the whole batch before the split gives another run (the model's mean
over time sees the padding), which the test tells apart.

``trainer.lr_find`` on every rank (a script under ``mpiexec``) was refused ("call it before
the ranks start"); now rank 0 runs the range test and every rank gets its result: equal to
one process's, the ranks' weights untouched, and a failure on rank 0 said on rank 1 (not a
wait for ever)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import collate_lr_find_r37h5_check as check  # noqa: E402

SCRIPT = "collate_lr_find_r37h5_check.py"
pytestmark = pytest.mark.mpi


def _torch_loop(start, ranks, per_rank=True):
    items = check.items()
    lin = torch.nn.Linear(3, 1).double()
    lin.load_state_dict({k.split(".")[-1]: torch.tensor(v, dtype=torch.float64)
                         for k, v in start.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=check.LR, momentum=0.9)
    losses = []
    for epoch in range(check.EPOCHS):
        order = np.random.default_rng([check.SEED, epoch]).permutation(check.N)
        for i in range(0, check.N, check.BATCH):
            glob = order[i:i + check.BATCH]
            if per_rank:
                parts = [check.pad([items[j] for j in glob[r::ranks]]) for r in range(ranks)]
            else:
                xs, ys = check.pad([items[j] for j in glob])
                parts = [(xs[r::ranks], ys[r::ranks]) for r in range(ranks)]
            loss = sum(torch.nn.functional.mse_loss(
                lin(torch.tensor(xs, dtype=torch.float64).mean(1)),
                torch.tensor(ys, dtype=torch.float64)) for xs, ys in parts) / ranks
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


@pytest.fixture(scope="module")
def both():
    """The collate run (dp) and the lr_find runs (auto) in one launch (round 39: two)."""
    return run_mpi(2, SCRIPT, "both", timeout=200)


def test_a_padding_collate_on_two_dp_ranks_is_ddps(both):
    for got in (r["collate"] for r in both):
        np.testing.assert_allclose(got["losses"], _torch_loop(got["start"], 2), atol=1e-6)
        whole = _torch_loop(got["start"], 2, per_rank=False)  # another run: told apart
        assert np.abs(np.array(got["losses"]) - whole).max() > 1e-2


def test_lr_find_on_two_ranks_is_rank_0s(both):
    one = check.lr_find("single")
    assert one["suggestion"] is not None and one["weights_kept"]
    got = [r["lr_find"] for r in both]
    for rank in got:
        assert rank["good"]["weights_kept"]
        for key in ("lr", "loss", "raw_loss"):
            np.testing.assert_allclose(rank["good"][key], one[key], rtol=1e-6)
        assert rank["good"]["suggestion"] == pytest.approx(one["suggestion"], rel=1e-9)
    bad = [rank["bad"]["error"] for rank in got]
    assert bad[0].startswith("ValueError: arrays of a dataset must have the same")
    assert bad[1] == "RuntimeError: lr_find failed on rank 0, which runs the range test: " + bad[0]

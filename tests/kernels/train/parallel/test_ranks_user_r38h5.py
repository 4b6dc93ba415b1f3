"""Round 38 (h5) on 2 real ranks: a loss function's dict's other values, a
``ReduceLROnPlateau`` schedule, an EMA callback's state across a resume.

``Trainer(loss=fn)`` with ``fn(out, y) -> {"loss": ..., "mae": ...}`` records ``mae`` as a
step metric (round 37, h9), but under ``--np 2 dp`` each rank recorded its own half's value
while the loss was averaged over the ranks: rank 0's history and callbacks said one MAE, rank
1's another, neither the batch's. They are now averaged over the data-parallel ranks as the
loss is, each rank's value weighed by its share of the batch's rows (the epoch's last batch
of 3 rows falls 2 / 1 on two ranks), so every rank records the whole batch's value, as one
process does.

The oracle: a torch 2.13 loop over the Trainer's batches (its seeded order) from the same
weights, the MSE and MAE of each step's whole batch computed by hand."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from .mpi_util import HERE, run_mpi

sys.path.insert(0, str(HERE / "scripts"))
import loss_extras_r38h5_check as check  # noqa: E402


def _torch_steps(grad_accum: int = 1) -> np.ndarray:
    """(mse, mae) per optimizer step: the mean over its micro-batches, each over its rows."""
    x, y = (torch.tensor(a, dtype=torch.float64) for a in check.data())
    lin = torch.nn.Linear(3, 1).double()
    lin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                         for k, v in check.model().state_dict().items()})
    opt = torch.optim.SGD(lin.parameters(), lr=check.LR, momentum=0.9)
    steps = []
    for epoch in range(check.EPOCHS):
        order = np.random.default_rng([check.SEED, epoch]).permutation(check.N)
        batches = [order[i:i + check.BATCH] for i in range(0, check.N, check.BATCH)]
        for j in range(0, len(batches), grad_accum):
            window = batches[j:j + grad_accum]
            opt.zero_grad()
            mse = mae = 0.0
            for rows in window:
                d = lin(x[rows]) - y[rows]
                loss = (d * d).mean() / len(window)
                loss.backward()
                mse += loss.item()
                mae += d.abs().mean().item() / len(window)
            opt.step()
            steps.append((mse, mae))
    return np.array(steps)


def _check(got, grad_accum=1):
    want = _torch_steps(grad_accum)
    np.testing.assert_allclose(got["losses"], want[:, 0], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got["mae"], want[:, 1], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got["seen"], want[:, 1], rtol=2e-5, atol=1e-6)


def test_one_process_records_the_batchs_mae():
    _check(check.main("single"))


CASES = [("dp", "1"), ("zero2", "2")]


@pytest.fixture(scope="module")
def user_ranks(tmp_path_factory):
    """The file's three MPI checks in one launch (round 42 h5: three launches; round 39: a
    launch per mae case)."""
    return run_mpi(2, "ranks_user_r42h5_check.py", tmp_path_factory.mktemp("ema"),
                   timeout=300)


@pytest.fixture(scope="module")
def mae_ranks(user_ranks):
    assert sorted(user_ranks[0]["cases"]) == sorted(f"{s}:{a}" for s, a in CASES)
    return user_ranks


@pytest.mark.mpi
@pytest.mark.parametrize("strategy,grad_accum", CASES)
def test_two_ranks_record_the_whole_batchs_mae(mae_ranks, strategy, grad_accum):
    ranks = [r["cases"][f"{strategy}:{grad_accum}"] for r in mae_ranks]
    for got in ranks:
        _check(got, int(grad_accum))
    # the ranks' halves differ: a rank's own value is not the batch's
    assert ranks[0]["mae"] == ranks[1]["mae"]


def _torch_plateau():
    """(lrs, losses) of a torch loop with ``ReduceLROnPlateau`` stepped on the whole
    validation set's loss after each epoch."""
    import plateau_r38h5_check as plateau

    (x, y), (vx, vy) = [tuple(torch.tensor(a) for a in d) for d in plateau.data()]
    lin = torch.nn.Linear(4, 1)
    lin.load_state_dict({k: torch.tensor(np.asarray(v))
                         for k, v in plateau.model().state_dict().items()})
    opt = torch.optim.SGD(lin.parameters(), lr=plateau.LR, momentum=0.9)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    lrs, losses = [], []
    for _ in range(plateau.EPOCHS):
        for i in range(0, len(x), plateau.BATCH):
            lrs.append(opt.param_groups[0]["lr"])
            loss = torch.nn.functional.mse_loss(lin(x[i:i + plateau.BATCH]),
                                                y[i:i + plateau.BATCH])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        with torch.no_grad():
            sched.step(torch.nn.functional.mse_loss(lin(vx), vy).item())
    return lrs, losses


@pytest.mark.mpi
def test_two_ranks_step_a_plateau_schedule_on_the_whole_validation_loss(user_ranks):
    """Both dp ranks step the plateau on the same value (the ranks' mean, a collective, as
    early stopping's), so they cut the lr at the steps a torch loop does, and train alike."""
    lrs, losses = _torch_plateau()
    assert len(set(lrs)) > 2
    ranks = [r["plateau"] for r in user_ranks]
    for got in ranks:
        np.testing.assert_allclose(got["lrs"], lrs, rtol=1e-6)
        np.testing.assert_allclose(got["losses"], losses, rtol=2e-5, atol=1e-6)


@pytest.mark.mpi
def test_two_ranks_keep_an_ema_callbacks_state_across_a_resume(user_ranks):
    """A stateful callback (an EMA of the weights) under zero2: its state is in the sharded
    checkpoint, and the resumed run's EMA is the whole run's on both ranks."""
    ranks = [r["ema"] for r in user_ranks]
    for got in ranks:
        assert got["whole"]["n_averaged"] == got["resumed"]["n_averaged"] == 12
        for k, v in got["whole"].items():
            np.testing.assert_array_equal(got["resumed"][k], v)
    assert ranks[0]["whole"] == ranks[1]["whole"]

"""Round 46 (h7): ``Trainer(schedule_interval="epoch")`` (round 45) had no flag: a ``%%train``
cell's ``StepLR(opt, 2)`` stepped after every optimizer step from the magic, panel and CLI.
``--schedule-interval step|epoch`` is in the shared grammar (``kinds/train.py``); the cell's
run through the job's own entry (in process) equals torch 2.13's loop that calls
``scheduler.step()`` after each epoch; ``epoch`` without a cell's scheduler is refused before
any run folder (the named schedules are planned in steps)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.jobs.launch import dry_run

torch = pytest.importorskip("torch")

CELL = """
import numpy as np
import skiff
import torch
rng = np.random.default_rng(3)
X = rng.standard_normal((24, 5))
y = (X[:, 0] - X[:, 2] > 0).astype(np.int64)
skiff.manual_seed(0)
model = skiff.nn.Sequential(skiff.nn.Linear(5, 8), skiff.nn.Tanh(),
                            skiff.nn.Linear(8, 2)).double()
first = {k: np.array(v) for k, v in model.state_dict().items()}
dataset = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(
    torch.tensor(X), torch.tensor(y)), batch_size=8, shuffle=False)
optimizer = lambda p: skiff.optim.SGD(p, lr=0.2, momentum=0.9)
schedule = lambda opt: skiff.optim.lr_scheduler.StepLR(opt, 2, 0.1)
loss = "cross_entropy"
"""


def test_the_flag_steps_a_cells_scheduler_once_an_epoch_as_torchs_loop(tmp_path, monkeypatch):
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.entry import run
    from skiff.kinds.train import cell_namespace

    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path))
    config = dry_run("train", "--epochs 4 --schedule-interval epoch --clip 0",
                     cell=CELL, front="magic")["config"]
    assert config["schedule_interval"] == "epoch"
    result = run(config, NullReporter()).to_json()
    ns = cell_namespace()
    exec(CELL, ns)  # the cell's data and first weights, for torch
    X, y = ns["X"], ns["y"]
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(v) for k, v in ns["first"].items()})
    opt = torch.optim.SGD(tm.parameters(), lr=0.2, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.1)
    want, lrs = [], []
    for _ in range(4):  # 3 batches an epoch, in order; StepLR stepped after each epoch
        for i in range(0, 24, 8):
            loss = torch.nn.functional.cross_entropy(tm(torch.tensor(X[i:i + 8])),
                                                     torch.tensor(y[i:i + 8]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            want.append(loss.item())
            lrs.append(opt.param_groups[0]["lr"])
        sched.step()
    assert [h["lr"] for h in result["history"]] == pytest.approx(lrs, rel=1e-12)
    np.testing.assert_allclose([h["loss"] for h in result["history"]], want, rtol=0,
                               atol=1e-12)

def test_epoch_without_a_cells_scheduler_is_refused_before_any_run():
    with pytest.raises(ValueError, match=r"--schedule-interval epoch steps a %%train cell's"):
        dry_run("train", "mlp --schedule-interval epoch", front="cli")
    with pytest.raises(ValueError, match=r"--schedule-interval epoch"):
        dry_run("train", "--schedule-interval epoch --epochs 1", cell=CELL.replace(
            "schedule = ", "sched = "), front="magic")
    assert "schedule_interval" not in dry_run("train", "mlp", front="cli")["config"]
    assert dry_run("train", "mlp --schedule-interval step", front="cli")["config"][
        "schedule_interval"] == "step"

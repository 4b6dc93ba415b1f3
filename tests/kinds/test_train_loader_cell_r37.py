"""Round 37: ``%train net loader`` with a torch ``DataLoader`` in the notebook trains as
``Trainer.train(loader)`` does (h5: the loader's order and ``drop_last`` followed); before,
the magic refused it ("DATA 'loader' is a DataLoader, not a data set"). Oracle: the steps a
torch loop over the same loader takes (40 rows, batch 8, drop_last: 5)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def test_train_magic_takes_a_torch_dataloader(runs_dir):
    from torch.utils.data import DataLoader, TensorDataset

    import skiff
    from skiff.jobs import submit

    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(size=(42, 3)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, 2, 42))
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False, drop_last=True)
    torch_steps = sum(1 for _ in loader)
    net = skiff.nn.Sequential(skiff.nn.Linear(3, 8), skiff.nn.ReLU(), skiff.nn.Linear(8, 2))
    job, _ = submit("train", "net loader --epochs 1", user_ns={"net": net, "loader": loader})
    job.wait(120)
    assert job.status == "done", job.error
    assert job.result["steps"] == torch_steps == 5

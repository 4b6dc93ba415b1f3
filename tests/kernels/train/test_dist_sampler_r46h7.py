"""Round 46 (h7): a DDP script's ``DataLoader(ds, sampler=DistributedSampler(...))`` handed
to the Trainer was refused ("pass loader.dataset and batch_size= the per-rank batch times the
ranks"). It is now followed: each epoch's order is the sampler's (``set_epoch(epoch)`` at each
epoch's start, padding by the first indices or ``drop_last``, ``shuffle``), the replicas'
batches together one global batch, which the Trainer shards over its ranks as the sampler
does. Oracle: torch 2.13's loop over the replicas' loaders (float64), DDP's step the mean of
the replicas' mean losses. On 2 MPI ranks: ``parallel/test_dist_sampler_r46h7.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402


def _script():
    """The 2-rank launch's script, whose torch DDP loop is this file's oracle too (loaded by
    its path: no folder put on sys.path)."""
    path = Path(__file__).parent / "parallel" / "scripts" / "dist_sampler_r46h7_check.py"
    spec = importlib.util.spec_from_file_location("dist_sampler_r46h7_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CHECK = _script()
X, Y, torch_ddp = _CHECK.X, _CHECK.Y, _CHECK.torch_ddp


def first():
    return _CHECK.seeded(_CHECK.classifier)


@pytest.mark.parametrize("replicas,kw", [(1, {"seed": 3}), (2, {"seed": 5}),
                                         (2, {"shuffle": False}), (2, {"drop_last": True})])
def test_a_distributed_sampler_is_followed_as_torchs_ddp_loop(replicas, kw):
    want, tm = torch_ddp(replicas, 4, 2, **kw)
    ds = torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y))
    sampler = torch.utils.data.DistributedSampler(ds, num_replicas=replicas, rank=0, **kw)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, sampler=sampler,
                                         drop_last=kw.get("drop_last", False))
    model = first()
    result = skiff.Trainer(model, optimizer=lambda p: skiff.optim.SGD(p, lr=0.1),
                           loss="cross_entropy", clip=None, schedule="constant").train(
        loader, epochs=2)
    np.testing.assert_allclose([h["loss"] for h in result.history], want, rtol=0, atol=1e-12)
    for k, v in model.state_dict().items():
        np.testing.assert_allclose(np.asarray(v), tm.state_dict()[k].numpy(), atol=1e-12)


def test_skiffs_own_distributed_sampler_in_its_loader_is_followed_too():
    """``skiff.utils.data``'s DataLoader and DistributedSampler (torch's indices exactly
    without shuffling) were refused ("its own sampler"): torch's DDP loop's run."""
    from skiff.utils.data import DataLoader, DistributedSampler, TensorDataset

    want, tm = torch_ddp(2, 4, 2, shuffle=False)
    ds = TensorDataset(skiff.tensor(X), skiff.tensor(Y))
    loader = DataLoader(ds, batch_size=4,
                        sampler=DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False))
    model = first()
    result = skiff.Trainer(model, optimizer=lambda p: skiff.optim.SGD(p, lr=0.1),
                           loss="cross_entropy", clip=None, schedule="constant").train(
        loader, epochs=2)
    np.testing.assert_allclose([h["loss"] for h in result.history], want, rtol=0, atol=1e-12)
    for k, v in model.state_dict().items():
        np.testing.assert_allclose(np.asarray(v), tm.state_dict()[k].numpy(), atol=1e-12)

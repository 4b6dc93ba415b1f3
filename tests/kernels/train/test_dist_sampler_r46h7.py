"""Round 46 (h7): a DDP script's ``DataLoader(ds, sampler=DistributedSampler(...))`` handed
to the Trainer was refused ("pass loader.dataset and batch_size= the per-rank batch times the
ranks"). It is now followed: each epoch's order is the sampler's (``set_epoch(epoch)`` at each
epoch's start, padding by the first indices or ``drop_last``, ``shuffle``), the replicas'
batches together one global batch, which the Trainer shards over its ranks as the sampler
does. Oracle: torch 2.13's loop over the replicas' loaders (float64), DDP's step the mean of
the replicas' mean losses. On 2 MPI ranks: ``parallel/test_dist_sampler_r46h7.py``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import skiff  # noqa: E402
from skiff import nn  # noqa: E402

RNG = np.random.default_rng(46)
X = RNG.standard_normal((23, 5))
Y = (X[:, 0] + 0.5 * X[:, 1] > 0.2).astype(np.int64)


def first():
    skiff.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)).double()


def torch_ddp(replicas, batch, epochs, **kw):
    """torch's DDP loop in one process: a loader per replica, set_epoch each epoch, the
    step of the mean of the replicas' mean losses (DDP averages the gradients)."""
    ds = torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y))
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(),
                             torch.nn.Linear(8, 2)).double()
    tm.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in first().state_dict().items()})
    opt = torch.optim.SGD(tm.parameters(), lr=0.1)
    samplers = [torch.utils.data.DistributedSampler(ds, num_replicas=replicas, rank=r, **kw)
                for r in range(replicas)]
    loaders = [torch.utils.data.DataLoader(ds, batch_size=batch, sampler=s,
                                           drop_last=kw.get("drop_last", False))
               for s in samplers]
    want = []
    for epoch in range(epochs):
        for s in samplers:
            s.set_epoch(epoch)
        for parts in zip(*loaders):
            losses = [torch.nn.functional.cross_entropy(tm(xb), yb) for xb, yb in parts]
            loss = sum(losses) / replicas
            opt.zero_grad()
            loss.backward()
            opt.step()
            want.append(loss.item())
    return want, tm


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

"""Round 46 (h7) on 2 ranks. usage: dist_sampler_r46h7_check.py

- ``ddp``: a DDP script's loader, ``DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds,
  num_replicas=2, rank=rank, seed=5))`` of 23 rows (padded to 24), 2 epochs; ``cut``: the
  same with ``drop_last=True`` (22 rows).
- ``early`` (round 30, its own launch before): early stopping on ranks validating 4 and 28
  rows watches the loss over all 32 (torch's replay picks the same best step).
- ``passes``: a stream whose passes differ over the ranks (rank 0: 12, 8, 16 samples, rank 1:
  14, 10, 20), 3 epochs: every rank trains on the shortest (12, 8, 16); it hung before (the
  ranks planned other ends, one waited in an all-reduce).
Prints ``RESULT {"rank", case: {"losses", "weights"} or {"error"}}``.
"""

import json

import numpy as np
import torch

import skiff
from skiff import nn
from skiff.kernels.train.parallel import world

RNG = np.random.default_rng(46)
X = RNG.standard_normal((23, 5))
Y = (X[:, 0] + 0.5 * X[:, 1] > 0.2).astype(np.int64)
XS = np.random.default_rng(7).standard_normal((20, 3))
YS = XS @ np.array([[1.0], [-2.0], [0.5]])


class Passes:
    """An IterableDataset whose pass of epoch e yields the first LENGTHS[rank][e] samples."""

    def __init__(self, lengths):
        self.lengths, self.epoch = lengths, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        for i in range(self.lengths[self.epoch % 3]):
            yield XS[i], YS[i]


def classifier():
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 2)).double()


def regressor():
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)).double()


def seeded(make):
    """A model of ``make`` drawn from skiff's generator seeded 0 (the run's and the oracle's
    first weights)."""
    skiff.manual_seed(0)
    return make()


def run(data, make, loss, epochs, **kw):
    model = seeded(make)
    try:
        result = skiff.Trainer(model, optimizer=lambda p: skiff.optim.SGD(p, lr=0.1),
                               loss=loss, clip=None, schedule="constant", **kw).train(
            data, epochs=epochs)
    except ValueError as exc:
        return {"error": str(exc)}
    return {"losses": [h["loss"] for h in result.history],
            "weights": {k: np.asarray(v, np.float64).ravel().tolist()
                        for k, v in model.state_dict().items()}}


ROWS = (4, 28)  # validation rows of rank 0 and rank 1 (round 30's early stopping case)
SLOPES = (1.0, 1.8)  # what each rank's validation set wants (training wants 2.0)


def early_sets():
    """Round 30 (``test_early_stop_weighted_r30g.py``'s launch, folded in here in round 46):
    2 ranks validating 4 and 28 rows; early stopping must watch the loss over all 32."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    vals = []
    for rows, k in zip(ROWS, SLOPES):
        xv = rng.standard_normal((rows, 3)).astype(np.float32)
        vals.append((xv, k * xv[:, :1]))
    return (x, 2 * x[:, :1]), vals


def early(rank):
    train, vals = early_sets()
    skiff.seed(0)
    model = nn.Sequential(nn.Linear(3, 1))
    seen = []

    class Keep:  # each validation's weights, for the torch replay
        def on_validation_end(self, trainer, row):
            w = trainer.strategy.full_state_dict(trainer.model)
            seen.append({k: np.asarray(v).ravel().tolist() for k, v in w.items()})

    trainer = skiff.Trainer(model, strategy="dp", lr=0.02, batch_size=8, seed=0,
                            early_stopping=2, callbacks=[Keep()], verbose=False)
    result = trainer.train(train, epochs=40, val_dataset=vals[rank])
    return {"steps": result.steps, "best_step": result.best_step,
            "val_steps": [v["step"] for v in result.val_history],
            "keys": sorted(result.val_history[-1]), "weights": seen}


def check_early(a, b):
    """Round 30: the ranks agree; the best step is torch's replay of each validation's
    weights on the union of the sets (its MSE, the loss to watch); no private keys."""
    assert (a["steps"], a["best_step"]) == (b["steps"], b["best_step"])
    assert a["keys"] == ["epoch", "step", "val_loss", "val_r2"]  # no private count
    _, vals = early_sets()
    x = torch.tensor(np.concatenate([v[0] for v in vals]))
    y = torch.tensor(np.concatenate([v[1] for v in vals]))
    losses = []
    for w in a["weights"]:
        lin = torch.nn.Linear(3, 1)
        lin.load_state_dict({"weight": torch.tensor(w["0.weight"]).reshape(1, 3),
                             "bias": torch.tensor(w["0.bias"])})
        with torch.no_grad():
            losses.append(torch.nn.functional.mse_loss(lin(x), y).item())
    best = a["val_steps"][int(np.argmin(losses))]
    assert a["best_step"] == best, (a["best_step"], best, losses)


def cases(rank):
    """The cases on this rank (also run inside another launch: ``main`` adds them)."""
    ds = torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y))

    def loader(**kw):
        sampler = torch.utils.data.DistributedSampler(ds, num_replicas=2, rank=rank, **kw)
        return torch.utils.data.DataLoader(ds, batch_size=4, sampler=sampler,
                                           drop_last=kw.get("drop_last", False))

    return {"ddp": run(loader(seed=5), classifier, "cross_entropy", 2),
            "cut": run(loader(drop_last=True), classifier, "cross_entropy", 2),
            "passes": run(Passes([[12, 8, 16], [14, 10, 20]][rank]), regressor, "mse", 3,
                          batch_size=4, shuffle=False),
            "early": early(rank)}


def torch_twin(make):
    """torch's float64 twin of ``seeded(make)`` (its first weights) and its SGD(lr=0.1)."""
    sizes = {classifier: (5, 8, 2), regressor: (3, 8, 1)}[make]
    tm = torch.nn.Sequential(torch.nn.Linear(*sizes[:2]), torch.nn.Tanh(),
                             torch.nn.Linear(*sizes[1:])).double()
    tm.load_state_dict({k: torch.tensor(np.asarray(v))
                        for k, v in seeded(make).state_dict().items()})
    return tm, torch.optim.SGD(tm.parameters(), lr=0.1)


def torch_step(opt, loss, want):
    opt.zero_grad()
    loss.backward()
    opt.step()
    want.append(loss.item())


def torch_ddp(replicas, batch, epochs, **kw):
    """The oracle: torch's DDP loop in one process (a loader per replica, set_epoch each
    epoch, the step of the mean of the replicas' mean losses: DDP averages gradients). Also
    the oracle of the one-process test (``tests/kernels/train/test_dist_sampler_r46h7.py``)."""
    ds = torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y))
    tm, opt = torch_twin(classifier)
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
            torch_step(opt, sum(torch.nn.functional.cross_entropy(tm(xb), yb)
                                for xb, yb in parts) / replicas, want)
    return want, tm


def torch_passes():
    """The oracle of ``passes``: torch's loop over the shortest rank's passes, 12, 8, 16."""
    tm, opt = torch_twin(regressor)
    want = []
    for n in (12, 8, 16):
        for i in range(0, n, 4):
            torch_step(opt, torch.nn.functional.mse_loss(tm(torch.tensor(XS[i:i + 4])),
                                                         torch.tensor(YS[i:i + 4])), want)
    return want, tm


def check_results(results):
    """Each rank's cases against torch (losses and weights to 1e-12; round 30's early
    stopping case as its test checked it)."""
    check_early(results[0]["early"], results[1]["early"])
    for case, kw in (("ddp", {"seed": 5}), ("cut", {"drop_last": True}), ("passes", None)):
        want, tm = torch_ddp(2, 4, 2, **kw) if kw is not None else torch_passes()
        for r in results:
            assert "losses" in r[case], (case, r[case])
            np.testing.assert_allclose(r[case]["losses"], want, rtol=0, atol=1e-12,
                                       err_msg=case)
            for k, v in r[case]["weights"].items():
                np.testing.assert_allclose(v, tm.state_dict()[k].numpy().ravel(), atol=1e-12,
                                           err_msg=f"{case} {k}")


def main():
    rank = world().rank
    print("RESULT " + json.dumps({"rank": rank, **cases(rank)}), flush=True)


if __name__ == "__main__":
    main()

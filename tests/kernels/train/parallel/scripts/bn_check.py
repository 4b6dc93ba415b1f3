"""A CNN with BatchNorm trained with ``strategy="auto"`` on 2 ranks against torch run as
``DistributedDataParallel`` runs it (each rank normalises its own rows, gradients averaged),
with the ranks' running statistics averaged after each step. The convolution has no bias:
before BatchNorm its gradient is zero in exact arithmetic, and Adam turns the rounding noise
into full steps that move the running mean (4e-3 apart between float32 and float64).

Prints the largest relative loss difference, the largest difference of the running mean and
variance against the torch emulation, and the predictions of the trained model (which must
be the same on both ranks).
"""

import copy
import json

import abort_on_error  # noqa: F401
import numpy as np
import torch
from mpi4py import MPI

import skiff
from skiff.nn import BatchNorm2d, Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential

T = torch.nn


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


def main():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 1, 8, 8)).astype(np.float32)
    y = (x.sum(axis=(1, 2, 3)) > 0).astype(np.int64)
    skiff.seed(0)
    model = Sequential(Conv2d(1, 4, 3, bias=False), BatchNorm2d(4), ReLU(), MaxPool2d(2),
                       Flatten(), Linear(36, 2))
    init = {k: np.asarray(v).copy() for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, strategy="auto", batch_size=16, shuffle=False,
                            schedule="constant", clip=None, lr=1e-2)
    result = trainer.train((x, y), epochs=2)
    want, mean, var = torch_ddp(init, np.concatenate([x, x]), np.concatenate([y, y]), 16)
    got = [r["loss"] for r in result.history]
    state = trainer.model.state_dict()
    print("RESULT " + json.dumps({
        "rank": MPI.COMM_WORLD.rank, "world": trainer.strategy.world_size,
        "steps": len(got), "torch_steps": len(want),
        "loss": max(abs(a - b) / abs(b) for a, b in zip(got, want)),
        "running_mean": float(np.abs(np.asarray(state["1.running_mean"]) - mean).max()),
        "running_var": float(np.abs(np.asarray(state["1.running_var"]) - var).max()),
        "predict": np.asarray(trainer.predict(x[:4])).ravel().tolist()}), flush=True)


main()

"""``Trainer(model, strategy="auto").train(data)`` with no reporter, as a user's script run
by ``mpiexec -n 2`` (or spawned by ``MPI.COMM_SELF.Spawn``, argument ``spawned``), against
PyTorch on the whole batch (float64, AdamW, the same first weights and batch order).

An MLP (49 rows at batch 16: a last batch of one row, which one rank alone holds) and a CNN
(41 rows at batch 8). Prints per model: the strategy, the world size it trained over, the
largest relative loss difference and weight difference against torch.
"""

import contextlib
import io
import json
import sys

import abort_on_error  # noqa: F401
import numpy as np
import torch
from mpi4py import MPI

import skiff
from skiff.nn import Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential

T = torch.nn


def models(kind):
    if kind == "mlp":
        return (Sequential(Linear(3, 16), ReLU(), Linear(16, 1)),
                T.Sequential(T.Linear(3, 16), T.ReLU(), T.Linear(16, 1)))
    return (Sequential(Conv2d(1, 4, 3), ReLU(), MaxPool2d(2), Flatten(), Linear(36, 3)),
            T.Sequential(T.Conv2d(1, 4, 3), T.ReLU(), T.MaxPool2d(2), T.Flatten(),
                         T.Linear(36, 3)))


def data(kind, n):
    rng = np.random.default_rng(1)
    if kind == "mlp":
        x = rng.standard_normal((n, 3)).astype(np.float32)
        return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    return x, (x.sum(axis=(1, 2, 3)) > 0).astype(np.int64) + (x[:, 0, 0, 0] > 1)


def torch_run(model, init, x, y, batch, epochs, lr):
    model = model.double()
    model.load_state_dict({k: torch.tensor(np.asarray(v, np.float64)) for k, v in init.items()})
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    xt, yt = torch.tensor(x, dtype=torch.float64), torch.tensor(y)
    losses = []
    for _ in range(epochs):
        for s in range(0, len(x), batch):
            out, yb = model(xt[s:s + batch]), yt[s:s + batch]
            loss = (T.functional.mse_loss(out, yb.double()) if yb.dtype.is_floating_point
                    else T.functional.cross_entropy(out, yb))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in model.state_dict().items()}


def train_twice():
    """``train`` called again continues with the same AdamW moments (ZeRO rebuilt its flat
    shard and started them afresh): against torch stepping one optimizer through both."""
    x, y = data("mlp", 40)
    skiff.seed(0)
    model, reference = models("mlp")
    init = {k: np.asarray(v).copy() for k, v in model.state_dict().items()}
    trainer = skiff.Trainer(model, strategy="auto", batch_size=8, shuffle=False,
                            schedule="constant", clip=None, lr=1e-2)
    got = [r["loss"] for r in trainer.train((x, y), epochs=1).history]
    got += [r["loss"] for r in trainer.train((x, y), steps=7).history]
    reference = reference.double()
    reference.load_state_dict({k: torch.tensor(np.asarray(v, np.float64))
                               for k, v in init.items()})
    opt = torch.optim.AdamW(reference.parameters(), lr=1e-2, weight_decay=0.01)
    want = []
    for s in [0, 8, 16, 24, 32] + [0, 8, 16, 24, 32, 0, 8]:  # 5 steps, then 7 from the start
        loss = T.functional.mse_loss(reference(torch.tensor(x[s:s + 8], dtype=torch.float64)),
                                     torch.tensor(y[s:s + 8], dtype=torch.float64))
        opt.zero_grad()
        loss.backward()
        opt.step()
        want.append(loss.item())
    return {"strategy": trainer.strategy.name, "steps": len(got),
            "loss": max(abs(a - b) / abs(b) for a, b in zip(got, want))}


def main():
    out = {"rank": MPI.COMM_WORLD.rank}
    spawned = sys.argv[1:] == ["spawned"]
    # spawned ranks: the MLP alone (the same Trainer code; the launch is what differs)
    for kind, n, batch in (("mlp", 49, 16),) + ((("cnn", 41, 8),) if not spawned else ()):
        x, y = data(kind, n)
        skiff.seed(0)
        model, reference = models(kind)
        init = {k: np.asarray(v).copy() for k, v in model.state_dict().items()}
        trainer = skiff.Trainer(model, strategy="auto", batch_size=batch, shuffle=False,
                                schedule="constant", clip=None, lr=1e-2)
        result = trainer.train((x, y), epochs=2)
        weights = trainer.strategy.full_state_dict(trainer.model)
        want, want_w = torch_run(reference, init, x, y, batch, 2, 1e-2)
        got = [r["loss"] for r in result.history]
        out[kind] = {"strategy": trainer.strategy.name, "world": trainer.strategy.world_size,
                     "steps": len(got), "torch_steps": len(want),
                     "loss": max(abs(a - b) / abs(b) for a, b in zip(got, want)),
                     "weights": max(float(np.abs(np.asarray(weights[k]) - want_w[k]).max())
                                    for k in want_w)}
    if spawned:
        parent = MPI.Comm.Get_parent()
        parent.gather(out, root=0)
        parent.Disconnect()
    else:
        out["twice"] = train_twice()
        # verbose: one line per epoch, printed by the reporting rank alone
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            x, y = data("mlp", 49)
            skiff.Trainer(models("mlp")[0], strategy="auto", batch_size=16,
                          verbose=True).train((x, y), epochs=2)
        out["verbose_lines"] = len([line for line in printed.getvalue().splitlines()
                                    if line.startswith("epoch ")])
        print("RESULT " + json.dumps(out), flush=True)


main()

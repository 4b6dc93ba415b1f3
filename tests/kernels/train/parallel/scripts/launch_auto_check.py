"""``Trainer(model, strategy="auto").train(data)`` with no reporter, as a user's script run
by ``mpiexec -n 2`` (or spawned by ``MPI.COMM_SELF.Spawn``, argument ``spawned``); the test
holds it against PyTorch on the whole batch (float64, AdamW, the same first weights and batch
order), run in the test's process (round 39: torch imported in every rank cost ~1.8 CPU s
each).

An MLP (49 rows at batch 16: a last batch of one row, which one rank alone holds) and a CNN
(41 rows at batch 8). Prints per model: the strategy, the world size it trained over, the
first weights, the step losses and the trained weights.
"""

import contextlib
import io
import json
import sys

import numpy as np

import skiff
from skiff.nn import Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential

# (kind, rows, batch) of the two runs; the spawned ranks run the MLP alone
RUNS = (("mlp", 49, 16), ("cnn", 41, 8))
EPOCHS, LR = 2, 1e-2


def model(kind):
    if kind == "mlp":
        return Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    return Sequential(Conv2d(1, 4, 3), ReLU(), MaxPool2d(2), Flatten(), Linear(36, 3))


def data(kind, n):
    rng = np.random.default_rng(1)
    if kind == "mlp":
        x = rng.standard_normal((n, 3)).astype(np.float32)
        return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    return x, (x.sum(axis=(1, 2, 3)) > 0).astype(np.int64) + (x[:, 0, 0, 0] > 1)


def _lists(state) -> dict:
    return {k: np.asarray(v, np.float64).tolist() for k, v in state.items()}


def train_twice():
    """``train`` called again continues with the same AdamW moments (ZeRO rebuilt its flat
    shard and started them afresh): the test steps one torch optimizer through both."""
    x, y = data("mlp", 40)
    skiff.seed(0)
    net = model("mlp")
    init = _lists(net.state_dict())
    trainer = skiff.Trainer(net, strategy="auto", batch_size=8, shuffle=False,
                            schedule="constant", clip=None, lr=LR)
    got = [r["loss"] for r in trainer.train((x, y), epochs=1).history]
    got += [r["loss"] for r in trainer.train((x, y), steps=7).history]
    return {"strategy": trainer.strategy.name, "init": init, "losses": got}


def main():
    import abort_on_error  # noqa: F401
    from mpi4py import MPI

    out = {"rank": MPI.COMM_WORLD.rank}
    spawned = sys.argv[1:] == ["spawned"]
    for kind, n, batch in RUNS[:1] if spawned else RUNS:
        x, y = data(kind, n)
        skiff.seed(0)
        net = model(kind)
        init = _lists(net.state_dict())
        trainer = skiff.Trainer(net, strategy="auto", batch_size=batch, shuffle=False,
                                schedule="constant", clip=None, lr=LR)
        result = trainer.train((x, y), epochs=EPOCHS)
        out[kind] = {"strategy": trainer.strategy.name, "world": trainer.strategy.world_size,
                     "init": init, "losses": [r["loss"] for r in result.history],
                     "weights": _lists(trainer.strategy.full_state_dict(trainer.model))}
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
            skiff.Trainer(model("mlp"), strategy="auto", batch_size=16,
                          verbose=True).train((x, y), epochs=2)
        out["verbose_lines"] = len([line for line in printed.getvalue().splitlines()
                                    if line.startswith("epoch ")])
        print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

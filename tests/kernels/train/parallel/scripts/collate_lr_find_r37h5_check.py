"""Round 37: a DataLoader's padding ``collate_fn`` under dp, and ``trainer.lr_find`` on every
rank; prints ``RESULT {...}`` per rank.
usage: [mpiexec -n 2] python collate_lr_find_r37h5_check.py collate|lr_find STRATEGY
       mpiexec -n 2 python collate_lr_find_r37h5_check.py both (collate dp, lr_find auto)"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
import skiff.utils.data as sud
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, Module, ReLU, Sequential

N, BATCH, EPOCHS, LR, SEED = 24, 8, 2, 0.1, 7


def items():
    """Sequences of 1 to 6 steps of 3 features; the target their sum / 3."""
    rng = np.random.default_rng(1)
    out = []
    for _ in range(N):
        x = rng.normal(size=(int(rng.integers(1, 7)), 3)).astype(np.float32)
        out.append((x, np.float32(x.sum() / 3)))
    return out


def pad(batch):
    """Zero-pads the batch's sequences to its longest."""
    longest = max(len(x) for x, _ in batch)
    xs = np.zeros((len(batch), longest, 3), np.float32)
    for i, (x, _) in enumerate(batch):
        xs[i, :len(x)] = x
    return xs, np.array([y for _, y in batch], np.float32)[:, None]


class MeanOverTime(Module):
    """A linear map of the padded sequence's mean over time: the padding changes it."""

    def __init__(self):
        super().__init__()
        self.lin = Linear(3, 1)

    def forward(self, x):
        return self.lin(x.mean(axis=1))


def collate(strategy):
    skiff.seed(3)
    m = MeanOverTime()
    start = {k: np.asarray(v, np.float64).tolist() for k, v in m.state_dict().items()}
    tr = skiff.Trainer(m, strategy=strategy, optimizer="sgd", lr=LR, schedule="constant",
                       clip=None, seed=SEED)
    loader = sud.DataLoader(items(), batch_size=BATCH, shuffle=True, collate_fn=pad)
    result = tr.train(loader, epochs=EPOCHS)
    return {"losses": result.losses, "start": start}


def classes():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 10)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def lr_find(strategy, bad=False):
    skiff.seed(1 + (world().rank if strategy != "single" else 0))  # the ranks' own weights
    m = Sequential(Linear(10, 16), ReLU(), Linear(16, 2))
    before = {k: np.array(v) for k, v in m.state_dict().items()}
    tr = skiff.Trainer(m, strategy=strategy, batch_size=16, seed=SEED)
    x, y = classes()
    try:
        found = tr.lr_find((x, y[:-1]) if bad else (x, y), steps=40)
    except Exception as exc:  # noqa: BLE001 - what each rank says, for the test
        return {"error": f"{type(exc).__name__}: {exc}"}
    same = all(np.array_equal(v, before[k]) for k, v in m.state_dict().items())
    return {**found, "weights_kept": same}


def run(what, strategy) -> dict:
    out = collate(strategy) if what == "collate" else \
        {"good": lr_find(strategy), "bad": lr_find(strategy, bad=True)}
    out["rank"] = world().rank if strategy != "single" else 0
    return out


if __name__ == "__main__":
    if sys.argv[1] == "both":  # one launch: collate under dp, then lr_find under auto
        out = {"collate": run("collate", "dp"), "lr_find": run("lr_find", "auto")}
        out["rank"] = out["collate"]["rank"]
    else:
        out = run(sys.argv[1], sys.argv[2])
    print("RESULT " + json.dumps(out), flush=True)

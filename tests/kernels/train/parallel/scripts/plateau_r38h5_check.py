"""Round 38: ``schedule=ReduceLROnPlateau`` on 1 or 2 ranks; prints ``RESULT {...}`` per rank
(each step's lr, the step losses, the validation rows' losses).
usage: [mpiexec -n 2] python plateau_r38h5_check.py STRATEGY"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear
from skiff.optim.lr_scheduler import ReduceLROnPlateau

LR, BATCH, EPOCHS = 0.05, 8, 8


def data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(44, 4)).astype("f4")
    y = (x @ np.array([1.0, -1.0, 0.5, 2.0], "f4"))[:, None] + rng.normal(size=(44, 1)) * 0.5
    return (x[:32], y[:32].astype("f4")), (x[32:], y[32:].astype("f4"))


def model():
    skiff.seed(0)
    return Linear(4, 1)


def main(strategy):
    train, val = data()
    tr = skiff.Trainer(model(), strategy=strategy, optimizer="sgd", lr=LR, batch_size=BATCH,
                       shuffle=False, clip=None,
                       schedule=lambda opt: ReduceLROnPlateau(opt, factor=0.5, patience=0))
    result = tr.train(train, epochs=EPOCHS, val_dataset=val)
    return {"rank": world().rank if strategy != "single" else 0, "losses": result.losses,
            "lrs": [r["lr"] for r in result.history],
            "val": [v["val_loss"] for v in result.val_history]}


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:])), flush=True)

"""Round 38: a loss function's dict's other values (``{"loss": ..., "mae": ...}``) on 1 or 2
ranks; prints ``RESULT {...}`` per rank (step losses, the history's mae, a callback's mae).
usage: [mpiexec -n 2] python loss_extras_r38h5_check.py STRATEGY [GRAD_ACCUM]
       mpiexec -n 2 python loss_extras_r38h5_check.py STRATEGY:GRAD_ACCUM ... (one launch)"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear

# 35 rows at batch 8: the epoch's last batch of 3 rows splits 2 / 1 over two ranks
N, BATCH, EPOCHS, LR, SEED = 35, 8, 2, 0.05, 4


def data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(N, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None] + 0.3


def model():
    skiff.seed(2)
    return Linear(3, 1)


def dict_loss(out, y):
    d = out - y
    return {"loss": (d * d).mean(), "mae": abs(d).mean()}


def main(strategy, grad_accum="1"):
    seen = []
    tr = skiff.Trainer(model(), strategy=strategy, optimizer="sgd", lr=LR,
                       schedule="constant", clip=None, batch_size=BATCH, seed=SEED,
                       loss=dict_loss, grad_accum=int(grad_accum),
                       callbacks=[lambda m: seen.append(m["mae"])])
    result = tr.train(data(), epochs=EPOCHS)
    return {"rank": world().rank if strategy != "single" else 0, "losses": result.losses,
            "mae": [row["mae"] for row in result.history], "seen": seen}


if __name__ == "__main__":
    if any(":" in a for a in sys.argv[1:]):  # several cases in one launch: STRATEGY:ACCUM ...
        cases = {a: main(*a.split(":")) for a in sys.argv[1:]}
        out = {"rank": world().rank, "cases": cases}
    else:
        out = main(*sys.argv[1:])
    print("RESULT " + json.dumps(out), flush=True)

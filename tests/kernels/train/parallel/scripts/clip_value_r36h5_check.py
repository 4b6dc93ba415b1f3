"""Round 36: ``Trainer(clip=C, clip_by="value")`` on 1 or 2 ranks; prints ``RESULT {...}``
(losses, final weights) per rank.
usage: [mpiexec -n 2] python clip_value_r36h5_check.py STRATEGY [PRECISION]"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, ReLU, Sequential

N, BATCH, EPOCHS, LR, SEED, CLIP = 64, 16, 2, 0.2, 5, 0.05


def data():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(N, 4)).astype(np.float32) * 3
    return x, (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None] ** 2 / 10


def model():
    skiff.seed(3)
    return Sequential(Linear(4, 16), ReLU(), Linear(16, 1))


def main(strategy, precision="32"):
    m = model()
    tr = skiff.Trainer(m, strategy=strategy, optimizer="sgd", lr=LR, schedule="constant",
                       clip=CLIP, clip_by="value", batch_size=BATCH, seed=SEED,
                       precision=precision)
    result = tr.train(data(), epochs=EPOCHS)
    return {"rank": world().rank if strategy != "single" else 0, "losses": result.losses,
            "w": {k: np.asarray(v, np.float64).tolist() for k, v in m.state_dict().items()}}


if __name__ == "__main__":
    # STRATEGY[,STRATEGY...]: several in one launch (round 42 h17: a launch each paid two
    # interpreters' imports), one result per rank holding each strategy's
    strategies, rest = sys.argv[1].split(","), sys.argv[2:]
    out = {s: main(s, *rest) for s in strategies}
    print("RESULT " + json.dumps({"rank": out[strategies[0]]["rank"], **out}), flush=True)

"""Round 30: ``Trainer(class_weight="balanced")`` on 2 ranks (dp) with a validation set;
prints ``RESULT {...}`` (losses, final weights, the last validation, class_metrics) per rank.
usage: mpiexec -n 2 python class_weight_dp_r30_check.py (round 43 h5: its test runs ``run``
in ``class_weight_accum_r36h5_check.py``'s launch)
"""

import json

import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, ReLU, Sequential

N, BATCH, EPOCHS, LR, SEED = 96, 16, 2, 0.05, 5


def data(seed=2, n=N):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    s = x[:, 0] + 0.5 * x[:, 1]
    return x, np.where(s > 1.0, 2, np.where(s > 0.2, 1, 0)).astype(np.int64)


def model():
    skiff.seed(3)
    return Sequential(Linear(4, 16), ReLU(), Linear(16, 3))


def main():
    print("RESULT " + json.dumps(run()), flush=True)


def run():
    comm = world()
    m = model()
    tr = skiff.Trainer(m, strategy="dp", optimizer="sgd", lr=LR, schedule="constant",
                       clip=None, batch_size=BATCH, seed=SEED, class_weight="balanced")
    result = tr.train(data(), epochs=EPOCHS, val_dataset=data(seed=7, n=40))
    out = {"rank": comm.rank, "losses": result.losses, "class_metrics": result.class_metrics,
           "val_loss": result.val_history[-1]["val_loss"],
           "weights": {k: float(v) for k, v in tr.class_weights_.items()},
           "w": {k: np.asarray(v).tolist() for k, v in m.state_dict().items()}}
    return out


if __name__ == "__main__":
    main()

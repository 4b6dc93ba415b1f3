"""Round 36: ``Trainer(class_weight="balanced", grad_accum=A)`` on 1 or 2 ranks (dp);
prints ``RESULT {...}`` (losses, final weights) per rank.
usage: [mpiexec -n 2] python class_weight_accum_r36h5_check.py STRATEGY A [DIR]
DIR (round 43 h5): round 30's dp case too (``class_weight_dp_r30_check.run``), one launch
for both; each rank writes ``DIR/rank<r>.json`` ({"accum": ..., "r30": ...})."""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, ReLU, Sequential

N, BATCH, EPOCHS, LR, SEED = 96, 8, 2, 0.05, 5


def data(seed=2, n=N):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    s = x[:, 0] + 0.5 * x[:, 1]
    return x, np.where(s > 1.0, 2, np.where(s > 0.2, 1, 0)).astype(np.int64)


def model():
    skiff.seed(3)
    return Sequential(Linear(4, 16), ReLU(), Linear(16, 3))


def main(strategy, accum):
    m = model()
    tr = skiff.Trainer(m, strategy=strategy, optimizer="sgd", lr=LR, schedule="constant",
                       clip=None, batch_size=BATCH, seed=SEED, class_weight="balanced",
                       grad_accum=accum)
    result = tr.train(data(), epochs=EPOCHS)
    return {"rank": world().rank if strategy != "single" else 0, "losses": result.losses,
            "w": {k: np.asarray(v).tolist() for k, v in m.state_dict().items()}}


if __name__ == "__main__":
    got = main(sys.argv[1], int(sys.argv[2]))
    if len(sys.argv) > 3:  # and round 30's case (no grad_accum) in the same launch: files
        from pathlib import Path

        import class_weight_dp_r30_check

        got = {"accum": got, "r30": class_weight_dp_r30_check.run()}
        Path(sys.argv[3], f"rank{world().rank}.json").write_text(json.dumps(got))
        got = {"rank": world().rank}
    print("RESULT " + json.dumps(got), flush=True)

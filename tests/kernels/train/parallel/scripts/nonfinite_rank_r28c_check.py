"""A non-finite loss on one rank only fails the step on every rank (round 28).

usage: nonfinite_rank_r28c_check.py BAD_ROW
Trains a 2-rank Trainer on data whose row BAD_ROW holds 1e30 (finite, but its squared
error overflows float32: a bad batch on whichever rank that row falls on) four ways (dp,
dp with gradient accumulation, zero2, dp in fp16-mixed) and a clean dp run; prints each
run's error (or steps), its losses and rank.
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.kernels.train.trainer import TrainingDiverged
from skiff.nn import Linear, ReLU, Sequential

STEPS = 8


def data(bad_row=None):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
    if bad_row is not None:
        x[bad_row, 1] = 1e30
    return x, y


def run(bad_row, strategy="dp", **kw):
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    trainer = skiff.Trainer(model, strategy=strategy, lr=0.01, batch_size=8, seed=0, **kw)
    try:
        result = trainer.train(data(bad_row), steps=STEPS)
        return {"steps": result.steps, "losses": [h["loss"] for h in result.history]}
    except TrainingDiverged as exc:
        return {"error": str(exc)}


def main():
    comm = world()
    bad = int(sys.argv[1])
    out = {"rank": comm.rank, "clean": run(None)}
    out["dp"] = run(bad)
    out["accum"] = run(bad, grad_accum=2)
    out["zero2"] = run(bad, strategy="zero2")
    out["fp16"] = run(bad, precision="fp16-mixed")
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""Ranks given different data sets (round 29). usage: same_data_r29_check.py

Each case trains a 2-rank Trainer; the ranks' data differ as the case says. Prints
``RESULT {"rank", case: {"error": ...} or {"losses": [...]}}``. Errors are caught and the
next case runs: a refusal must come on every rank at once (no rank left waiting, no alarm).
"""

import json

import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, ReLU, Sequential


def arrays(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


def run(data, val=None):
    skiff.seed(0)
    tr = skiff.Trainer(Sequential(Linear(3, 16), ReLU(), Linear(16, 1)), lr=0.01,
                       batch_size=8, seed=0)
    try:
        result = tr.train(data, epochs=1, val_dataset=val)
    except ValueError as exc:
        return {"error": str(exc)}
    return {"losses": [h["loss"] for h in result.history]}


def main():
    rank = world().rank
    same = arrays(64)
    out = {"rank": rank,
           # one file per rank, of different lengths: hung after the shorter rank's epoch
           "lengths": run(arrays(64 if rank == 0 else 40, seed=rank)),
           # one file per rank of the same length: trained on half of each, silently
           "rows": run(arrays(64, seed=rank)),
           # the same training set, a validation set of each rank's own (allowed)
           "val": run(same, val=arrays(16 if rank == 0 else 12)),
           # the same data as a list of samples (no row hash: lengths only) and as arrays
           "samples": run([(a, b) for a, b in zip(*same)]),
           "clean": run(same)}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""Parameters some ranks' graphs do not reach (round 29). usage: unused_params_r29_check.py

A model with a layer it never uses and a branch taken only when a rank's half of the batch
sums above zero (so one rank uses it and the other not, step by step), trained on 2 ranks
with dp (one bucket), dp with one bucket per parameter (the buckets then complete in
different orders on the ranks) and the latter with grad_accum=2. Prints
``RESULT {"rank", case: {"losses", "weights"}}``.
"""

import json

import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.data_parallel import DataParallel
from skiff.nn import Linear, Module

STEPS, BATCH = 6, 8


def arrays():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


class Branchy(Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = Linear(3, 16), Linear(16, 1)
        self.extra = Linear(16, 1)      # never used
        self.side = Linear(3, 1)        # used on the rows of a rank whose sum is positive

    def forward(self, x):
        out = self.b(self.a(x).relu())
        if float(x.sum().item()) > 0:
            out = out + self.side(x)
        return out


def run(strategy, grad_accum=1):
    skiff.seed(0)
    tr = skiff.Trainer(Branchy(), strategy=strategy, optimizer="adamw", weight_decay=0.01,
                       schedule="constant", lr=0.01, batch_size=BATCH, shuffle=False, seed=0,
                       grad_accum=grad_accum)
    result = tr.train(arrays(), steps=STEPS)
    return {"losses": [h["loss"] for h in result.history],
            "weights": {k: np.asarray(v).tolist() for k, v in tr.model.state_dict().items()}}


def main():
    comm = world()
    out = {"rank": comm.rank, "dp": run("dp"),
           "small": run(DataParallel(comm, bucket_mb=1e-5)),
           "accum": run(DataParallel(comm, bucket_mb=1e-5), grad_accum=2)}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

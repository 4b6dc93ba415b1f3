"""fp16-mixed on 2 ranks (dp, ZeRO-1, ZeRO-2) against torch's fp16 autocast + GradScaler on
the whole batch (one process: what the 2 ranks must equal).

usage: fp16_ranks_r27_check.py [--out DIR] CASE ...   (CASE: "huge" an MLP classifier whose
data hold one sample 300 times the rest; "big" a regression whose gradients overflow float16
at the first scales)

Each rank prints the steps it skipped for overflow, its losses and its final float32 masters
(gathered); the test computes the oracle in its own process from the same first weights
(round 39: it was computed in every rank, each importing torch, ~1.8 CPU s).
"""

import json
import sys

import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel.data_parallel import ZeRO
from skiff.nn import Linear, ReLU, Sequential

STEPS, BATCH, LR = 10, 16, 0.02


class Reporter(NullReporter):
    def __init__(self, ranks):
        self.world_size = ranks
        self.skipped = []

    def log(self, message, *, level="info"):
        if " skipped: gradients overflowed" in message:
            self.skipped.append(int(message.split()[1]))


def data(case):
    rng = np.random.default_rng(0)
    if case == "huge":
        x = rng.standard_normal((64, 8)).astype(np.float32)
        y = (x.sum(1) > 0).astype(np.int64)
        x[5] *= 300.0
        return x, y, (8, 32, 2)
    amp = float(case[3:].rstrip("ua"))  # "regA": targets of about A ("regAu": 56 rows, the
    x = rng.standard_normal((56 if case.endswith("u") else 64, 8)).astype(np.float32)  # last
    # batch of each epoch 8 rows)
    y = (amp * np.tanh(x @ rng.standard_normal((8, 1)))).astype(np.float32)
    return x, y, (8, 16, 1)


def model_of(sizes):
    skiff.seed(0)
    return Sequential(Linear(sizes[0], sizes[1]), ReLU(), Linear(sizes[1], sizes[2]))


def masters_of(trainer):
    st, mixed = trainer.strategy, trainer.mixed
    if isinstance(st, ZeRO):  # the masters are this rank's flat float32 slice: gather them
        for q in st.params:
            q._data = q._data.astype(np.float32)
        st.gather_params()
        return [q._data.copy() for q in st.params]
    return [m.numpy().copy() for m in mixed.master]


def first_weights(case):
    return [p.numpy().copy() for p in model_of(data(case)[2]).parameters()]


def main():
    import abort_on_error  # noqa: F401
    from mpi4py import MPI

    rank, args = MPI.COMM_WORLD.rank, sys.argv[1:]
    folder = None
    if args[:1] == ["--out"]:  # the masters go to DIR/masters-RANK.json (stdout lines of
        folder, args = args[1], args[2:]  # 100 kB from two ranks interleave)
    out, masters = {"rank": rank}, {}
    for case in args:
        x, y, sizes = data(case)
        res = {}
        for strategy, ranks in (("single", 1), ("dp", 2), ("zero1", 2), ("zero2", 2)):
            rep = Reporter(ranks)
            acc = 2 if case.endswith("a") else 1  # "regAa": two micro-batches of 8 a step
            trainer = skiff.Trainer(model_of(sizes), strategy=strategy, grad_accum=acc,
                                    batch_size=BATCH // acc,
                                    reporter=rep, precision="fp16-mixed", optimizer="sgd",
                                    lr=LR, schedule="constant", shuffle=False, clip=None)
            result = trainer.train((x, y), steps=STEPS)
            res[strategy] = {"skipped": rep.skipped,
                             "losses": [r["loss"] for r in result.history]}
            masters[f"{case}/{strategy}"] = [np.asarray(m, np.float64).tolist()
                                             for m in masters_of(trainer)]
        out[case] = res
    if folder is None:
        for key, value in masters.items():
            case, strategy = key.split("/")
            out[case][strategy]["masters"] = value
    else:
        with open(f"{folder}/masters-{rank}.json", "w") as fh:
            json.dump(masters, fh)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""fp16-mixed on 2 ranks (dp, ZeRO-1, ZeRO-2) against torch's fp16 autocast + GradScaler on
the whole batch (one process: what the 2 ranks must equal).

usage: fp16_ranks_r27_check.py CASE ...   (CASE: "huge" an MLP classifier whose data hold one
sample 300 times the rest; "big" a regression whose gradients overflow float16 at the first
scales)

Each rank prints the steps it skipped for overflow, its losses and how far its final float32
masters (gathered) lie from the oracle's, and the oracle's steps and losses (computed on every
rank the same way).
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np
import torch
from mpi4py import MPI

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


def oracle(weights, x, y, classify):
    """torch: float16 weights and activations, loss in float32, float32 masters, SGD with
    momentum 0.9, GradScaler's rules (init 2^16, halve and skip on inf/nan)."""
    masters = [torch.tensor(w, requires_grad=True) for w in weights]
    opt = torch.optim.SGD(masters, lr=LR, momentum=0.9)
    scale, losses, skipped = 2.0 ** 16, [], []
    starts = list(range(0, len(x), BATCH))  # the last batch of an epoch may be smaller
    for s in range(STEPS):
        i = starts[s % len(starts)]
        xb, yb = torch.tensor(x[i:i + BATCH]), torch.tensor(y[i:i + BATCH])
        w1, b1, w2, b2 = (m.detach().half().requires_grad_() for m in masters)
        out = (torch.relu(xb.half() @ w1.T + b1) @ w2.T + b2).float()
        loss = torch.nn.functional.cross_entropy(out, yb) if classify else \
            torch.nn.functional.mse_loss(out, yb)
        losses.append(loss.item())
        (loss * scale).backward()
        grads = [t.grad.float() / scale for t in (w1, b1, w2, b2)]
        if all(torch.isfinite(g).all() for g in grads):
            for m, g in zip(masters, grads):
                m.grad = g
            opt.step()
        else:
            skipped.append(s + 1)
            scale /= 2
    return {"skipped": skipped, "losses": losses,
            "masters": [m.detach().numpy() for m in masters]}


def masters_of(trainer):
    st, mixed = trainer.strategy, trainer.mixed
    if isinstance(st, ZeRO):  # the masters are this rank's flat float32 slice: gather them
        for q in st.params:
            q._data = q._data.astype(np.float32)
        st.gather_params()
        return [q._data.copy() for q in st.params]
    return [m.numpy().copy() for m in mixed.master]


def master_diff(got, want):
    """The largest difference of the masters over the oracle's largest weight (1 at least);
    inf when they do not line up."""
    if len(got) != len(want) or any(g.size != w.size for g, w in zip(got, want)):
        return float("inf")
    return max(float(np.abs(g.astype(np.float64).ravel() - w.ravel()).max())
               / max(float(np.abs(w).max()), 1.0) for g, w in zip(got, want))


def main():
    out = {"rank": MPI.COMM_WORLD.rank}
    for case in sys.argv[1:]:
        x, y, sizes = data(case)
        weights = [p.numpy().copy() for p in model_of(sizes).parameters()]
        ref = oracle(weights, x, y, case == "huge")
        res = {"oracle": {k: ref[k] for k in ("skipped", "losses")}}
        for strategy, ranks in (("single", 1), ("dp", 2), ("zero1", 2), ("zero2", 2)):
            rep = Reporter(ranks)
            acc = 2 if case.endswith("a") else 1  # "regAa": two micro-batches of 8 a step
            trainer = skiff.Trainer(model_of(sizes), strategy=strategy, grad_accum=acc,
                                    batch_size=BATCH // acc,
                                    reporter=rep, precision="fp16-mixed", optimizer="sgd",
                                    lr=LR, schedule="constant", shuffle=False, clip=None)
            result = trainer.train((x, y), steps=STEPS)
            res[strategy] = {"skipped": rep.skipped,
                             "losses": [r["loss"] for r in result.history],
                             "master_diff": master_diff(masters_of(trainer), ref["masters"])}
        out[case] = res
    print("RESULT " + json.dumps(out), flush=True)


main()

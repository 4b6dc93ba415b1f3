"""Data parallel / ZeRO against one process on the same global batch, on every rank.

usage: dp_check.py STRATEGY STEPS ACCUM [CKPT_DIR SAVE_AT]
       dp_check.py same:S1,S2,... STEPS ACCUM [CKPT_DIR SAVE_AT] (one launch, one result
       per strategy; its checkpoints in CKPT_DIR/S)
       dp_check.py JOB+JOB STEPS+STEPS ACCUM+ACCUM (round 43 h10: one launch, ``jobs``: a
       result each, JOB any of the above: same:..., compare:..., STRATEGY)
STRATEGY: dp | dp-sync | zero1 | zero2 | compression spec (fp16, bf16, topk:ratio=0.3, ...)
Each rank runs the distributed training and, alone, the single-process reference; it reports
the largest differences of the losses and final weights, and the bytes it sent.
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.core.tensor import Tensor
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO
from skiff.kernels.train.strategy import SingleDevice

B, D_IN, D_H, D_OUT = 8, 6, 10, 3
try:
    import skiff.kernels.train.core.optim  # noqa: F401

    HAVE_OPTIM = True
except ImportError:
    HAVE_OPTIM = False


class Tiny:
    """A two-layer perceptron on raw Tensors (parameters in registration order)."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self._p = {
            "w1": Tensor(rng.standard_normal((D_IN, D_H)).astype(np.float32) * 0.5,
                         requires_grad=True),
            "b1": Tensor(np.zeros(D_H, np.float32), requires_grad=True),
            "w2": Tensor(rng.standard_normal((D_H, D_OUT)).astype(np.float32) * 0.5,
                         requires_grad=True),
            "b2": Tensor(np.zeros(D_OUT, np.float32), requires_grad=True),
        }

    def named_parameters(self):
        return list(self._p.items())

    def parameters(self):
        return list(self._p.values())

    def state_dict(self):
        return {k: v._data.copy() for k, v in self._p.items()}

    def load_state_dict(self, d):
        for k, v in d.items():
            self._p[k]._data[...] = v

    def __call__(self, x):
        p = self._p
        return ((x @ p["w1"] + p["b1"]).tanh()) @ p["w2"] + p["b2"]


def loss_fn(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def batch(step):
    rng = np.random.default_rng(1000 + step)
    return (rng.standard_normal((B, D_IN)).astype(np.float32),
            rng.standard_normal((B, D_OUT)).astype(np.float32))


class MomentumSGD:
    """Stand-in while the core optimizers are not there (same element-wise character)."""

    def __init__(self, params, lr=0.05, momentum=0.9):
        self.params, self.lr, self.mu = list(params), lr, momentum
        self.buf = [np.zeros_like(p._data) for p in self.params]

    def step(self):
        for p, b in zip(self.params, self.buf):
            b *= self.mu
            b += p._grad
            p._data -= self.lr * b

    def zero_grad(self):
        for p in self.params:
            p._grad = None

    def state_dict(self):
        return {"buf": [b.copy() for b in self.buf]}

    def load_state_dict(self, d):
        self.buf = [np.array(b) for b in d["buf"]]


def make_opt(params):
    try:
        from skiff.kernels.train.core.optim import AdamW
    except ImportError:
        return MomentumSGD(params)
    return AdamW(params, lr=0.05, weight_decay=0.01)


def train(strategy, steps, accum, rank, size, seed=0, ckpt=None, save_at=None, start=None):
    model = Tiny(seed if rank == 0 else seed + 7)  # other ranks start elsewhere: broadcast
    strategy.bind(device="cpu")
    model, opt = strategy.setup(model, make_opt)
    losses = []
    first = 0
    if start is not None:
        state = strategy.load_checkpoint(ckpt)
        model.load_state_dict(state["model"])
        strategy.load_optimizer_state_dict(opt, state["optimizer"])
        first = int(state["step"])
    for step in range(first, steps):
        x, y = batch(step)
        lo, hi = rank * B // size, (rank + 1) * B // size
        x, y = x[lo:hi], y[lo:hi]
        n = len(x) // accum
        vals = []
        for m in range(accum):
            mb = strategy.to_device((x[m * n:(m + 1) * n], y[m * n:(m + 1) * n]), np.float32)
            vals.append(strategy.forward_backward(model, mb, loss_fn, scale=1 / accum))
        strategy.reduce_gradients(model)
        if HAVE_OPTIM:
            strategy.clip_grad_norm(model, 1.0)
        strategy.optimizer_step(opt)
        opt.zero_grad()
        losses.append(strategy.reduce_metrics({"loss": float(np.mean(vals))})["loss"])
        if ckpt is not None and save_at is not None and step + 1 == save_at:
            strategy.save_checkpoint(ckpt, {"model": strategy.full_state_dict(model),
                                            "optimizer": strategy.optimizer_state_dict(opt),
                                            "step": step + 1}, step=step + 1, keep=2)
    return losses, strategy.full_state_dict(model)


def make(kind, comm):
    if kind == "dp":
        return DataParallel(comm, bucket_mb=0.0001)  # ~200 bytes: several buckets
    if kind == "dp-sync":
        return DataParallel(comm, bucket_mb=0.0001, overlap=False)
    if kind == "zero1":
        return ZeRO(1, comm, bucket_mb=0.0001)
    if kind == "zero2":  # small buckets: reduce-scatters whose ranges straddle the ranks
        return ZeRO(2, comm, bucket_mb=0.0001)
    return DataParallel(comm, compression=kind)


def compare(kinds, steps, accum):
    """Several strategies in one launch: losses and bytes sent by each."""
    comm = world()
    out = {"rank": comm.rank}
    for kind in kinds:
        before = comm.bytes_sent
        losses, _ = train(make(kind, comm), steps, accum, comm.rank, comm.size)
        out[kind] = {"losses": losses, "bytes": comm.bytes_sent - before}
    return out


def against_one(kind, steps, accum, ckpt=None, mode=None):
    """``kind`` on this world against one process: the differences, bytes and buckets."""
    comm = world()
    strat = make(kind, comm)
    save_at = int(mode) if mode and mode.isdigit() else None
    start = mode == "resume"
    losses, weights = train(strat, steps, accum, comm.rank, comm.size, ckpt=ckpt,
                            save_at=save_at, start=True if start else None)
    ref_losses, ref = train(SingleDevice(), steps, accum, 0, 1)
    return {"rank": comm.rank, "losses": losses, "ref_losses": ref_losses,
            "loss_diff": float(np.max(np.abs(np.array(losses) - ref_losses[-len(losses):]))),
            "weight_diff": max(float(np.max(np.abs(weights[k] - ref[k]))) for k in ref),
            "bytes": comm.bytes_sent,
            "launches": len(strat.reducer.launch_log) if strat.reducer else 0,
            "buckets": len(strat.reducer.buckets) if strat.reducer else 0,
            "early": strat.reducer.bytes_early if strat.reducer else 0,
            "late": strat.reducer.bytes_late if strat.reducer else 0}


def job(kind, steps, accum, ckpt=None, mode=None):
    """One job's result: ``compare:``, ``same:``, ``ef:STEPS:SPECS`` (``ef_check.py``'s
    error feedback check) or one strategy against one process."""
    if kind.startswith("ef:"):
        import ef_check

        _, ef_steps, specs = kind.split(":", 2)
        return ef_check.check(int(ef_steps), specs.split(","))
    if kind.startswith("compare:"):
        return compare(kind[len("compare:"):].split(","), steps, accum)
    if kind.startswith("same:"):  # several kinds, one launch (round 43 h5): CKPT_DIR/KIND
        out = {"rank": world().rank}
        for k in kind[len("same:"):].split(","):
            out[k] = against_one(k, steps, accum, ckpt and f"{ckpt}/{k}", mode)
        return out
    return against_one(kind, steps, accum, ckpt, mode)


def main():
    kind, steps, accum = sys.argv[1], sys.argv[2], sys.argv[3]
    if "+" in kind:  # JOB+JOB STEPS+STEPS ACCUM+ACCUM: one launch, a result each (h10)
        out = {"rank": world().rank}
        out["jobs"] = [job(k, int(s), int(a)) for k, s, a in
                       zip(kind.split("+"), steps.split("+"), accum.split("+"), strict=True)]
        print("RESULT " + json.dumps(out), flush=True)
        return None
    ckpt = sys.argv[4] if len(sys.argv) > 4 else None
    mode = sys.argv[5] if len(sys.argv) > 5 else None
    print("RESULT " + json.dumps(job(kind, int(steps), int(accum), ckpt, mode)), flush=True)
    return None


if __name__ == "__main__":
    main()

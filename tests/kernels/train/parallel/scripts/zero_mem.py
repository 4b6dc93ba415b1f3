"""Peak memory of one training step under DP, ZeRO-1 and ZeRO-2 on every rank.

usage: zero_mem.py WIDTH LAYERS BUCKET_MB (LAYERS: a count, or counts "8,24", each a model
of its own in this one launch, reported under "by_layers")
tracemalloc counts numpy's allocations; the peak is taken over forward, backward, the
gradient reduction and the optimizer step, above what the rank held before the step. A small
untraced step first loads the kernels and modules a step uses (under tracemalloc, loading
numba's cached AdamW kernel took ~10 s of a rank's ~12).
"""

import json
import sys
import tracemalloc

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.core.optim import AdamW
from skiff.kernels.train.core.tensor import Tensor
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO


class Deep:
    """``LAYERS`` square tanh layers of ``WIDTH`` on raw Tensors."""

    def __init__(self, width, layers):
        rng = np.random.default_rng(0)
        self._p = {f"w{i}": Tensor(rng.standard_normal((width, width)).astype(np.float32)
                                   / np.sqrt(width), requires_grad=True)
                   for i in range(layers)}

    def named_parameters(self):
        return list(self._p.items())

    def parameters(self):
        return list(self._p.values())

    def __call__(self, x):
        for w in self._p.values():
            x = (x @ w).tanh()
        return x


def step_peak(strategy, width, layers, rank):
    model = Deep(width, layers)
    strategy.bind(device="cpu")
    model, opt = strategy.setup(model, lambda ps: AdamW(ps, lr=1e-3))
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((4, width)).astype(np.float32)
    for _ in range(2):  # the second step: the optimizer's state exists already
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        strategy.forward_backward(model, (x, None), lambda m, b: (m(b[0]) ** 2).mean())
        strategy.reduce_gradients(model)
        grads = tracemalloc.get_traced_memory()[1] - before  # backward and the reduction
        strategy.optimizer_step(opt)
        opt.zero_grad()
        step = tracemalloc.get_traced_memory()[1] - before  # the whole step
    strategy.teardown()
    return {"grads": grads, "step": step}


def peaks(comm, width, layers, bucket_mb) -> dict:
    out = {"rank": comm.rank, "size": comm.size, "grad_bytes": width * width * layers * 4,
           "bucket_bytes": int(bucket_mb * 2**20)}
    for kind, strategy in (("dp", DataParallel(comm, bucket_mb=bucket_mb)),
                           ("zero1", ZeRO(1, comm, bucket_mb=bucket_mb)),
                           ("zero2", ZeRO(2, comm, bucket_mb=bucket_mb))):
        out[kind] = step_peak(strategy, width, layers, comm.rank)
    return out


def main():
    width, bucket_mb = int(sys.argv[1]), float(sys.argv[3])
    counts = [int(n) for n in sys.argv[2].split(",")]
    comm = world()
    peaks(comm, 8, 1, bucket_mb)  # untraced: what a step loads, loaded before tracing
    tracemalloc.start()
    runs = {n: peaks(comm, width, n, bucket_mb) for n in counts}
    out = runs[counts[0]] if len(counts) == 1 else {"rank": comm.rank, "by_layers": runs}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

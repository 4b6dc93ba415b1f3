"""A run stopped on 2 ranks resumes on one process, a one-process run resumes on 2 ranks,
and ZeRO and dp resume each other, each ending as one device that never stopped.

usage: relayout_check.py DIR
Prints, per case, the largest loss and weight differences against the unstopped run and
the step it resumed from.
"""

import json
import shutil
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO
from skiff.nn import Linear, ReLU, Sequential

STEPS, STOP = 8, 3


class Reporter(NullReporter):
    def __init__(self, ranks, stop=None):
        self.world_size, self.stop, self.step = ranks, stop, 0

    def progress(self, done, total=None, **kw):
        self.step = done

    def should_stop(self):
        return self.stop is not None and self.step >= self.stop


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


def run(strategy, ranks, folder=None, stop=None, resume=False):
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    trainer = skiff.Trainer(model, strategy=strategy, lr=0.01, batch_size=8, seed=0,
                            checkpoint_dir=folder, resume=resume, reporter=Reporter(ranks, stop))
    result = trainer.train(data(), steps=STEPS)
    weights = trainer.strategy.full_state_dict(trainer.model)
    return result, weights


def compare(result, weights, ref):
    ref_result, ref_weights = ref
    losses = [r["loss"] for r in result.history]
    want = [r["loss"] for r in ref_result.history]
    return {"resumed": (result.resumed or {}).get("from_step"), "steps": result.steps,
            "loss": max(abs(a - b) / abs(b) for a, b in zip(losses, want)),
            "weights": max(float(np.abs(np.asarray(weights[k]) - ref_weights[k]).max())
                           for k in ref_weights)}


def main():
    comm = world()
    root = Path(sys.argv[1])
    out = {"rank": comm.rank}
    ref = run("single", 1)
    # 2 ranks (ZeRO-2) stopped, then: one process; 2 ranks of dp
    run(ZeRO(2), 2, root / "zero2", stop=STOP)
    if comm.rank == 0:
        shutil.copytree(root / "zero2", root / "zero2-one")
    comm.barrier()
    out["zero2->dp"] = compare(*run(DataParallel(), 2, root / "zero2", resume=True), ref)
    if comm.rank == 0:
        out["zero2->one"] = compare(*run("single", 1, root / "zero2-one", resume=True), ref)
        run("single", 1, root / "one", stop=STOP)  # one process stopped, then 2 ranks
    comm.barrier()
    out["one->zero1"] = compare(*run(ZeRO(1), 2, root / "one", resume=True), ref)
    print("RESULT " + json.dumps(out), flush=True)


main()

"""The Trainer on this world (2 ranks) against one device on the same data, with batches
that do not split evenly over the ranks: a last batch of one row (a rank left without rows),
a batch of 101 rows (51 and 50), and a batch size of 5 (3 and 2 rows).

usage: uneven_check.py KIND ...   (KIND in dp zero1 zero2)
Prints per kind and case the largest loss and weight differences against one device.
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.data_parallel import DataParallel, ZeRO
from skiff.nn import Linear, ReLU, Sequential

CASES = {"last-row": (101, 10), "odd-rows": (101, 200), "batch-5": (100, 5)}


class Ranks(NullReporter):
    world_size = 2


def data(n):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None] + 0.1


def run(strategy, n, batch):
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    trainer = skiff.Trainer(model, strategy=strategy or "single", lr=0.01, batch_size=batch,
                            seed=0, reporter=Ranks() if strategy else None)
    result = trainer.train(data(n), epochs=2)
    weights = trainer.strategy.full_state_dict(trainer.model)
    return [row["loss"] for row in result.history], weights, result.samples_per_s


def main():
    comm = world()
    out, refs = {"rank": comm.rank}, {}
    for kind in sys.argv[1:]:
        for case, (n, batch) in CASES.items():
            make = {"dp": DataParallel, "zero1": lambda: ZeRO(1), "zero2": lambda: ZeRO(2)}
            losses, weights, _ = run(make[kind](), n, batch)
            if case not in refs:  # one device's run, once a case (round 43 h10: once a kind)
                refs[case] = run(None, n, batch)
            ref_losses, ref_weights, _ = refs[case]
            out[f"{kind}/{case}"] = {
                "steps": [len(losses), len(ref_losses)],
                "loss": max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses)),
                "weights": max(float(np.abs(np.asarray(weights[k]) - ref_weights[k]).max())
                               for k in ref_weights),
                "finite": bool(np.all(np.isfinite(losses)))}
    print("RESULT " + json.dumps(out), flush=True)


main()

"""gpt-moe (tiny) through the Trainer on this world (2 ranks) against one device: dp and ep
as strings (the planner's record, so the plan check's micro-run runs first), SGD (AdamW
magnifies the rounding of gradients that are zero in exact arithmetic), 9 rows
at batch 4 (the last batch of each epoch one row: rank 1 runs a stand-in row).

usage: moe_trainer_check.py KIND ...   (KIND in dp ep)
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.moe import gpt_moe


class Ranks(NullReporter):
    world_size = 2


def data():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 64, (9, 8))
    return x, np.roll(x, -1, axis=1)


def run(strategy, ranks):
    skiff.seed(0)
    model = gpt_moe(block_size=8, capacity_factor=1.0)
    trainer = skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=4, seed=0,
                            reporter=Ranks() if ranks > 1 else None)
    result = trainer.train(data(), epochs=2)
    return [r["loss"] for r in result.history], trainer.strategy.full_state_dict(trainer.model)


def main():
    comm = world()
    out = {"rank": comm.rank}
    ref_losses, ref = run("single", 1)
    for kind in sys.argv[1:]:
        losses, weights = run(kind, comm.size)
        out[kind] = {"steps": [len(losses), len(ref_losses)],
                     "loss": max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses)),
                     "weights": max(float(np.abs(np.asarray(weights[k]) - ref[k]).max())
                                    for k in ref)}
    print("RESULT " + json.dumps(out), flush=True)


main()

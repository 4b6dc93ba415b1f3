"""Round 31: gpt-moe (tiny) trained expert-parallel on this world (2 ranks) with a token loss
(targets of -100 left out, as chat rows) accumulated over micro-batches, 9 rows at batch 4 x
``grad_accum=2`` (an epoch's second window is one batch of one row: rank 1 runs a stand-in
row). Each rank prints ``RESULT {...}``: for ``aux_coef`` 0 and 0.01, its losses, those of
the same run on one device (run first, on each rank), and the largest difference of the
full weights from that run's.

usage: mpiexec -n 2 python ep_accum_tokens_r31_check.py
"""

import json
import sys

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.moe import gpt_moe

ROWS, T, V = 9, 8, 64


class Ranks(NullReporter):
    world_size = 2


def data():
    """Next-token targets, most rows scored on a few positions only (a chat's answer)."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, V, (ROWS, T))
    y = np.roll(x, -1, axis=1)
    scored = np.array([1, 2, 1, 1, T, T - 1, 5, T, 3])  # micro-batches of 5 and 28 targets
    for i, k in enumerate(scored):
        y[i, :T - k] = -100
    return x.astype("i8"), y.astype("i8")


def run(strategy, ranks, aux_coef, steps=4):
    skiff.seed(0)
    model = gpt_moe(block_size=T, capacity_factor=4.0, aux_coef=aux_coef)
    trainer = skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=4,
                            grad_accum=2, seed=0, shuffle=False, clip=None,
                            schedule="constant", weight_decay=0.0,
                            reporter=Ranks() if ranks > 1 else None)
    result = trainer.train(data(), steps=steps)
    full = trainer.strategy.full_state_dict(trainer.model)
    return result.losses, {k: np.asarray(v) for k, v in full.items()}


def main():
    comm = world()
    out = {"rank": comm.rank}
    for aux in (0.0, 0.01):
        ref_losses, ref = run("single", 1, aux)
        losses, weights = run(sys.argv[1] if len(sys.argv) > 1 else "ep", comm.size, aux)
        out[str(aux)] = {"losses": losses, "ref_losses": ref_losses,
                         "weights": max(float(np.abs(weights[k] - ref[k]).max() /
                                              max(1.0, float(np.abs(ref[k]).max())))
                                        for k in ref)}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

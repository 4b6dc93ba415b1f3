"""Round 31: the ``ep_accum_tokens_r31`` run (gpt-moe, a token loss accumulated over 2
micro-batches of 5 and 28 scored targets, rank 1 on a stand-in row in the second window)
with a large balancing coefficient, so that how the ranks weigh the balancing term shows:
each rank prints ``RESULT {"rank", STRATEGY: {...}, ...}`` with, for each strategy, its
losses, one device's, and the largest relative difference of the full weights from one
device's (round 42 h17: the strategies in one launch, one device's run once; a launch each
paid two interpreters' imports and the same one-device run again).

usage: mpiexec -n 2 python moe_aux_tokens_r31b_check.py STRATEGY[,STRATEGY...] AUX_COEF
"""

import json
import sys

import abort_on_error  # noqa: F401
import ep_accum_tokens_r31_check as base
import numpy as np

from skiff.kernels.train.parallel import world


def main():
    comm = world()
    strategies, aux = sys.argv[1].split(","), float(sys.argv[2])
    ref_losses, ref = base.run("single", 1, aux)
    out = {"rank": comm.rank}
    for strategy in strategies:
        losses, weights = base.run(strategy, comm.size, aux)
        out[strategy] = {
            "losses": losses, "ref_losses": ref_losses,
            "weights": max(float(np.abs(weights[k] - ref[k]).max() /
                                 max(1.0, float(np.abs(ref[k]).max()))) for k in ref)}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""Round 31: the ``ep_accum_tokens_r31`` run (gpt-moe, a token loss accumulated over 2
micro-batches of 5 and 28 scored targets, rank 1 on a stand-in row in the second window)
with a large balancing coefficient, so that how the ranks weigh the balancing term shows:
each rank prints ``RESULT {...}`` with its losses, one device's, and the largest relative
difference of the full weights from one device's.

usage: mpiexec -n 2 python moe_aux_tokens_r31b_check.py STRATEGY AUX_COEF
"""

import json
import sys

import abort_on_error  # noqa: F401
import ep_accum_tokens_r31_check as base
import numpy as np

from skiff.kernels.train.parallel import world


def main():
    comm = world()
    strategy, aux = sys.argv[1], float(sys.argv[2])
    ref_losses, ref = base.run("single", 1, aux)
    losses, weights = base.run(strategy, comm.size, aux)
    print("RESULT " + json.dumps({
        "rank": comm.rank, "losses": losses, "ref_losses": ref_losses,
        "weights": max(float(np.abs(weights[k] - ref[k]).max() /
                             max(1.0, float(np.abs(ref[k]).max()))) for k in ref)}),
        flush=True)


if __name__ == "__main__":
    main()

"""Round 42 (h5), test time: round 38's three user checks on 2 ranks in one launch (they were
three: mpiexec's start and each rank's imports paid once, not three times). Runs
``loss_extras_r38h5_check`` (dp with grad_accum 1, zero2 with 2), ``plateau_r38h5_check``
(dp) and ``ema_r38h5_check`` (zero2, its checkpoints in DIR); prints one ``RESULT {...}``
per rank with each script's result.

usage: mpiexec -n 2 python ranks_user_r42h5_check.py DIR
"""

import json
import sys

import abort_on_error  # noqa: F401
import ema_r38h5_check as ema
import loss_extras_r38h5_check as extras
import plateau_r38h5_check as plateau

from skiff.kernels.train.parallel import world

if __name__ == "__main__":
    out = {"rank": world().rank,
           "cases": {a: extras.main(*a.split(":")) for a in ("dp:1", "zero2:2")},
           "plateau": plateau.main("dp"), "ema": ema.main("zero2", sys.argv[1])}
    print("RESULT " + json.dumps(out), flush=True)

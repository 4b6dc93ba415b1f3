"""ZeRO-1/2 with parameters no rank reaches in a step (round 29b). usage: <script>

The model of ``unused_params_r29_check`` (a layer never used, a branch taken on a rank's
rows only when they sum above zero) under ZeRO-1 and ZeRO-2, one bucket and one bucket per
parameter. Prints ``RESULT {"rank", case: {"losses", "weights"}}``.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from unused_params_r29_check import run  # noqa: E402

from skiff.kernels.train.parallel import world  # noqa: E402
from skiff.kernels.train.parallel.data_parallel import ZeRO  # noqa: E402


def main():
    comm = world()
    out = {"rank": comm.rank}
    for stage in (1, 2):
        out[f"zero{stage}"] = run(f"zero{stage}")
        out[f"zero{stage}_small"] = run(ZeRO(stage, comm, bucket_mb=1e-5))
    out["zero2_accum"] = run(ZeRO(2, comm, bucket_mb=1e-5), grad_accum=2)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""ZeRO-1/2 with parameters no rank reaches in a step (round 29b). usage: <script>

The model of ``unused_params_r29_check`` (a layer never used, a branch taken on a rank's
rows only when they sum above zero) under ZeRO-1 and ZeRO-2, one bucket and one bucket per
parameter. Prints ``RESULT {"rank", case: {"losses", "weights"}}``.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from unused_params_r29_check import STEPS, Branchy, arrays, run  # noqa: E402

import skiff  # noqa: E402
from skiff.kernels.train.parallel import world  # noqa: E402
from skiff.kernels.train.parallel.data_parallel import ZeRO  # noqa: E402


def masters(comm):
    """bf16-mixed zero2: the float32 masters (ZeRO's flat slices, gathered) by name."""
    skiff.seed(0)
    strategy = ZeRO(2, comm)
    tr = skiff.Trainer(Branchy(), strategy=strategy, optimizer="adamw", weight_decay=0.01,
                       schedule="constant", lr=0.01, batch_size=8, shuffle=False, seed=0,
                       precision="bf16-mixed")
    tr.train(arrays(), steps=STEPS)
    flat = comm.allgatherv(strategy.shard._data.copy())[0]
    out, off = {}, 0
    for name, p in zip(strategy.names, strategy.params):
        out[name] = flat[off:off + p.size].tolist()
        off += p.size
    return out


def main():
    comm = world()
    out = {"rank": comm.rank}
    for stage in (1, 2):
        out[f"zero{stage}"] = run(f"zero{stage}")
        out[f"zero{stage}_small"] = run(ZeRO(stage, comm, bucket_mb=1e-5))
    out["zero2_accum"] = run(ZeRO(2, comm, bucket_mb=1e-5), grad_accum=2)
    out["bf16"] = masters(comm)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

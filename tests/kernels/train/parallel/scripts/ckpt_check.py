"""Sharded checkpoints: save on this world, or load what another world size saved.

usage: ckpt_check.py save DIR STEP [kill_rank] | load DIR | loads DIR DIR ...
The global state is a function of the step, so any world size can check what it loaded.
"""

import json
import os
import signal
import sys

import abort_on_error  # noqa: F401
import numpy as np

from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.checkpoint import (
    READ_STATS,
    FlatShard,
    PerRank,
    flat_range,
    load_sharded,
    save_sharded,
)

N = 37  # not divisible by 2 or 4: shards of unequal length


def global_state(step):
    rng = np.random.default_rng(step)
    return {"w": rng.standard_normal((3, 4)).astype(np.float32),
            "m": rng.standard_normal(N), "v": rng.standard_normal(N)}


def main():
    comm = world()
    mode, folder = sys.argv[1], sys.argv[2]
    out = {"rank": comm.rank}
    if mode == "save":
        for step in range(1, int(sys.argv[3]) + 1):
            g = global_state(step)
            a, b = flat_range(N, comm.size, comm.rank)
            kill = None
            if len(sys.argv) > 4 and step == int(sys.argv[3]) and comm.rank == int(sys.argv[4]):
                def kill():
                    os.kill(os.getpid(), signal.SIGKILL)
            save_sharded(folder, comm, replicated={"model": {"w": g["w"]}, "step": step},
                         sharded={"opt": {"m": FlatShard(g["m"][a:b], N),
                                          "v": FlatShard(g["v"][a:b], N)},
                                  "residual": PerRank(np.full(2, comm.rank, float))},
                         step=step, keep=2, layout={"dp": comm.size},
                         _before_manifest=kill)
    elif mode == "loads":  # several folders, one launch (round 43 h10): a result each
        out["loads"] = [dict(load(comm, f), rank=comm.rank) for f in sys.argv[2:]]
    else:
        out.update(load(comm, folder))
    print("RESULT " + json.dumps(out), flush=True)


def load(comm, folder):
    """What this rank loaded of ``folder``, checked against the global state of its step."""
    bad = []
    res = load_sharded(folder, comm, on_corrupt=lambda f, e: bad.append(str(e)))
    g = global_state(res["step"])
    a, b = flat_range(N, comm.size, comm.rank)
    return dict(step=res["step"], old_world=res["world_size"], corrupt=bad,
                w=bool(np.array_equal(res["replicated"]["model"]["w"], g["w"])),
                m=bool(np.array_equal(res["sharded"]["opt"]["m"], g["m"][a:b])),
                v=bool(np.array_equal(res["sharded"]["opt"]["v"], g["v"][a:b])),
                residual=None if res["sharded"]["residual"] is None
                else res["sharded"]["residual"].tolist(), read=dict(READ_STATS))


main()

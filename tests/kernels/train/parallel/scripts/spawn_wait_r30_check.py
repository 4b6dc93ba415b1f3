"""Round 30: a parent that spawns 2 training ranks (``MPI.COMM_SELF.Spawn``, a notebook's way)
and gathers their results with :func:`skiff...parallel.spawned.gather_from_ranks`.

usage: spawn_wait_r30_check.py parent KIND     (KIND: ok | fail | plain)
       spawn_wait_r30_check.py child KIND      (started by the parent)
``fail``: rank 1's dataset raises on row BAD_ROW (after step 1); ``plain``: the parent waits
with a bare ``inter.gather`` (the round 29 hang, bounded by the test's kill). The parent
prints ``RESULT {...}`` per rank or ``FAILED <message>`` and leaves with ``os._exit`` (its
inter-communicator has ranks that never end their part).
"""

import json
import os
import sys
import time

import numpy as np

BAD_ROW, BATCH = 21, 8


class Rows:
    def __init__(self, fail):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((48, 3)).astype(np.float32)
        self.y = (self.x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
        self.fail = fail

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.fail and i == BAD_ROW:
            raise ValueError(f"row {BAD_ROW} is unreadable")
        return self.x[i], self.y[i]


def child(kind):
    from mpi4py import MPI

    import skiff
    from skiff.nn import Linear, ReLU, Sequential

    rank = MPI.COMM_WORLD.Get_rank()
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    tr = skiff.Trainer(model, strategy="dp", optimizer="sgd", schedule="constant", lr=0.01,
                       batch_size=BATCH, shuffle=False, seed=0)
    result = tr.train(Rows(kind in ("fail", "plain") and rank == 1), steps=4)
    out = {"rank": rank, "losses": result.losses,
           "w": {k: np.asarray(v).tolist() for k, v in model.state_dict().items()}}
    MPI.Comm.Get_parent().gather(out, root=0)
    MPI.Comm.Get_parent().Disconnect()


def leftover_pids():
    """Processes still running this script as a child (none should be, a while after)."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{d}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and __file__.encode() in argv and b"child" in argv:
            found.append(int(d))
    return found


def parent(kind):
    from mpi4py import MPI

    from skiff.kernels.train.parallel.spawned import SpawnedRanksFailed, gather_from_ranks

    inter = MPI.COMM_SELF.Spawn(sys.executable, args=[__file__, "child", kind], maxprocs=2)
    t0 = time.monotonic()
    try:
        if kind == "plain":
            results = inter.gather(None, root=MPI.ROOT)
        else:
            results = gather_from_ranks(inter, timeout=90)
    except (SpawnedRanksFailed, TimeoutError) as exc:
        print(f"FAILED {type(exc).__name__} after {time.monotonic() - t0:.1f} s: {exc}",
              flush=True)
        time.sleep(4)  # a notebook's kernel lives on: nothing may end this process now
        print("ALIVE " + json.dumps(leftover_pids()), flush=True)
        os._exit(3)
    for res in results:
        print("RESULT " + json.dumps(res), flush=True)
    inter.Disconnect()


if __name__ == "__main__":
    {"parent": parent, "child": child}[sys.argv[1]](sys.argv[2])

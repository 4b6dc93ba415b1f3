"""A SIGINT sent to rank 0 alone while it waits in a collective (round 29b).

usage: sigint_rank_r29b_check.py
Rank 1's dataset stalls on row 13 (which only rank 1 reads): it waits 2 s, so that rank 0
is in the step's gradient all-reduce, sends SIGINT to rank 0 alone, then stalls 300 s
more. Without the watcher's signal pipe rank 0 never ran its handler and the job hung
until killed. Prints ``RESULT`` only if a rank finishes training (it must not).
"""

import json
import os
import signal
import time

import numpy as np

import skiff
from skiff.kernels.train.parallel import rank_alarm, world
from skiff.nn import Linear, ReLU, Sequential

BAD_ROW = 13


class Rows:
    def __init__(self, pids, rank):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((64, 3)).astype(np.float32)
        self.y = (self.x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
        self.pids, self.rank = pids, rank

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.rank == 1 and i == BAD_ROW:
            time.sleep(2.0)
            print(f"rank 1: SIGINT to rank 0 (pid {self.pids[0]})", flush=True)
            os.kill(self.pids[0], signal.SIGINT)
            time.sleep(300)
        return self.x[i], self.y[i]


def main():
    comm = world()
    # rank 0 is blocked in the all-reduce: its watcher sits the whole grace out before it
    # leaves. 1 s, not 3 s, ends it the same way (round 46 h3: ~2 s off the run)
    rank_alarm.RankAlarm.__init__.__kwdefaults__["grace"] = 1.0
    pids = comm.allgather_object(os.getpid())
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    tr = skiff.Trainer(model, strategy="dp", optimizer="sgd", schedule="constant", lr=0.01,
                       batch_size=8, shuffle=False, seed=0)
    result = tr.train(Rows(pids, comm.rank), steps=8)
    print("RESULT " + json.dumps({"rank": comm.rank, "steps": result.steps}), flush=True)


if __name__ == "__main__":
    main()

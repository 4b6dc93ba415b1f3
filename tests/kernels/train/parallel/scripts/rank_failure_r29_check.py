"""One rank of a 2-rank Trainer fails in a way the ranks do not agree on (round 29).

usage: rank_failure_r29_check.py KIND CKPT_DIR
KIND: ``data`` (rank 1's dataset raises on row BAD_ROW, which only rank 1 reads), ``oom``
(a MemoryError there), ``interrupt`` (a KeyboardInterrupt there), ``stream`` (rank 1's
generator of samples fails while the Trainer reads it, before any step), ``ckpt`` (rank 1's shard
of the step-4 checkpoint fails to write: "No space left on device"), ``resume`` (no
failure: resume from CKPT_DIR and train to the end). Deliberately not importing
abort_on_error: the Trainer itself must stop the other rank, as in a user's script. Prints
``RESULT {...}`` when a rank finishes.
"""

import json
import sys

import numpy as np

import skiff
from skiff.kernels.train.parallel import checkpoint as sharded_ckpt
from skiff.kernels.train.parallel import rank_alarm, world
from skiff.nn import Linear, ReLU, Sequential

BAD_ROW, STEPS, BATCH = 13, 8, 8


def arrays():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]
    return x, y


def stream(rank):
    """A generator of samples whose source is missing on rank 1 (a file on that node)."""
    x, y = arrays()
    for i in range(len(x)):
        if rank == 1 and i == 30:
            raise FileNotFoundError(2, "No such file or directory", "/data/part-1.bin")
        yield x[i], y[i]


class Rows:
    """A user's dataset class; ``fail`` raises on BAD_ROW (None: never)."""

    def __init__(self, fail=None):
        self.x, self.y = arrays()
        self.fail = fail

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.fail is not None and i == BAD_ROW:
            raise self.fail
        return self.x[i], self.y[i]


def trainer(ckpt, **kw):
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    return skiff.Trainer(model, strategy="dp", optimizer="sgd", schedule="constant", lr=0.01,
                         batch_size=BATCH, shuffle=False, seed=0, checkpoint_dir=ckpt,
                         checkpoint_every=2, **kw)


def main(kind, ckpt):
    comm = world()
    # the rank that hears the alarm is blocked in a collective its peer never joins: it sits
    # the whole grace out before it leaves. 1 s, not 3 s, stops it the same way (round 46
    # h3: ~2 s off each failing run); the Trainer's own RankAlarm still does all of it
    rank_alarm.RankAlarm.__init__.__kwdefaults__["grace"] = 1.0
    fail = {"data": ValueError(f"row {BAD_ROW} is unreadable"),
            "oom": MemoryError("Unable to allocate 8.00 GiB for an array"),
            "interrupt": KeyboardInterrupt()}.get(kind)
    if kind == "ckpt" and comm.rank == 1:
        write = sharded_ckpt._write_npz

        def failing(path, *a, **k):
            if "step-00000004" in str(path):
                raise OSError(28, "No space left on device", str(path))
            return write(path, *a, **k)

        sharded_ckpt._write_npz = failing
    tr = trainer(ckpt, resume=kind == "resume")
    result = tr.train(stream(comm.rank) if kind == "stream" else Rows(fail), steps=STEPS)
    weights = {k: np.asarray(v).tolist() for k, v in tr.model.state_dict().items()}
    print("RESULT " + json.dumps({"rank": comm.rank, "steps": result.steps,
                                  "resumed": (result.resumed or {}).get("from_step"),
                                  "losses": [h["loss"] for h in result.history],
                                  "weights": weights}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

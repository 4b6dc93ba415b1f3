"""Stop requests seen on one rank only stop both ranks at the same step (round 28).

usage: stop_agree_r28b_check.py DIR
Runs a 2-rank dp Trainer four ways: uninterrupted (the oracle), cancelled on rank 1 only,
stopped by a callback on rank 1 only, and with early stopping; prints each run's steps,
why it stopped, its losses, its final checkpoint and its weights' sum.
"""

import json
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, ReLU, Sequential

STEPS, STOP = 8, 3


class Reporter(NullReporter):
    """A cancel that only this rank sees (a cancel file read late on the other rank)."""

    def __init__(self, stop=None):
        self.world_size, self.stop, self.step = 2, stop, 0

    def progress(self, done, total=None, **kw):
        self.step = done

    def should_stop(self):
        return self.stop is not None and self.step >= self.stop


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


def run(rank, folder, *, cancel_on=None, callback_on=None, **kw):
    skiff.seed(0)
    model = Sequential(Linear(3, 16), ReLU(), Linear(16, 1))
    cb = [] if callback_on is None else [
        lambda m: rank == callback_on and m["step"] == STOP]
    trainer = skiff.Trainer(model, strategy="dp", lr=0.01, batch_size=8, seed=0,
                            checkpoint_dir=folder, callbacks=cb,
                            reporter=Reporter(STOP if rank == cancel_on else None), **kw)
    result = trainer.train(data(), steps=STEPS, **({"val_dataset": data()} if
                                                   "early_stopping" in kw else {}))
    weights = trainer.strategy.full_state_dict(trainer.model)
    return {"steps": result.steps, "stopped": result.stopped,
            "losses": [h["loss"] for h in result.history],
            "checkpoint": None if result.checkpoint is None else Path(result.checkpoint).name,
            "weights": float(sum(np.abs(np.asarray(w)).sum() for w in weights.values()))}


def main():
    comm = world()
    root = Path(sys.argv[1])
    out = {"rank": comm.rank}
    out["full"] = run(comm.rank, root / "full")
    out["cancel"] = run(comm.rank, root / "cancel", cancel_on=1)
    out["callback"] = run(comm.rank, root / "callback", callback_on=1)
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""Early stopping on 2 ranks: both stop at one step and give back the same best weights
(round 28).

usage: early_stop_ranks_r28c_check.py
A dp Trainer learns y = 2 x0 while its validation set wants y = x0: the validation loss
falls, then rises, and early stopping (patience 2) ends the run; then each rank with its
own validation set (rank 1's wants y = 1.8 x0: its loss turns later). Prints each rank's
steps, why it stopped, its best step, its validation losses and its weights.
"""

import json

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, Sequential


def data(k=(1.0,)):
    """The training set, and the validation set: its rows once for each slope in ``k``."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    xv = rng.standard_normal((16, 3)).astype(np.float32)
    val = (np.concatenate([xv] * len(k)), np.concatenate([c * xv[:, :1] for c in k]))
    return (x, 2 * x[:, :1]), val


def run(strategy, k=(1.0,)):
    skiff.seed(0)
    model = Sequential(Linear(3, 1))
    trainer = skiff.Trainer(model, strategy=strategy, lr=0.02, batch_size=8, seed=0,
                            early_stopping=2)
    train, val = data(k)
    result = trainer.train(train, epochs=40, val_dataset=val)
    weights = trainer.strategy.full_state_dict(trainer.model)
    return {"steps": result.steps, "stopped": result.stopped,
            "best_step": getattr(result, "best_step", None),
            "val": [v["val_loss"] for v in result.val_history],
            "weights": {k: np.asarray(v).ravel().tolist() for k, v in weights.items()}}


def main():
    comm = world()
    out = {"rank": comm.rank, "dp": run("dp"),
           "own_val": run("dp", k=(1.0 if comm.rank == 0 else 1.8,))}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""Round 38: an EMA callback (``state_dict``/``load_state_dict``) on 2 ranks, a whole run and
a run cut at step 5 and resumed from its sharded checkpoint; prints ``RESULT {...}`` per
rank (both EMAs' weights and counts).
usage: mpiexec -n 2 python ema_r38h5_check.py STRATEGY DIR"""

import json
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.train.parallel import world
from skiff.nn import Linear, ReLU, Sequential
from skiff.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 5)).astype("f4")
Y = (X[:, 0] - X[:, 3] > 0).astype("i8")


class EMA:
    def __init__(self, model):
        self.ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.8))

    def on_step_end(self, trainer, metrics):
        self.ema.update_parameters(trainer.model)

    def state_dict(self):
        return self.ema.state_dict()

    def load_state_dict(self, state):
        self.ema.load_state_dict(state)


def run(strategy, folder, steps, resume=False):
    skiff.seed(0)
    model = Sequential(Linear(5, 8), ReLU(), Linear(8, 2))
    ema = EMA(model)
    skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=8, clip=None,
                  schedule="constant", callbacks=[ema], checkpoint_dir=folder,
                  resume=resume).train((X, Y), steps=steps)
    return {k: np.asarray(v, np.float64).tolist() for k, v in ema.state_dict().items()}


def main(strategy, folder):
    whole = run(strategy, Path(folder) / "whole", 12)
    run(strategy, Path(folder) / "cut", 5)
    resumed = run(strategy, Path(folder) / "cut", 12, resume=True)
    return {"rank": world().rank, "whole": whole, "resumed": resumed}


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:])), flush=True)

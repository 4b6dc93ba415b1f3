"""Round 31: a tiny GPT trained 3 SGD steps on this world (2 ranks) under each strategy given,
its checkpoints in ``DIR/<strategy>`` (every step: step-1/ .. step-3/, sharded). Prints
``RESULT {"rank": r}`` when done; the test reads the folders in one process.

usage: sharded_weights_r31_check.py DIR STRATEGY...
"""

import json
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import world

V, T = 16, 8


class Ranks(NullReporter):
    world_size = 2


def run(strategy, folder=None, ranks=2, steps=3):
    skiff.seed(0)
    model = GPT(GPTConfig(block_size=T, vocab_size=V, n_layer=2, n_head=2, n_embd=16))
    trainer = skiff.Trainer(model, strategy=strategy, optimizer="sgd", lr=0.1, batch_size=8,
                            seed=0, schedule="constant", checkpoint_dir=folder,
                            checkpoint_every=1, reporter=Ranks() if ranks > 1 else None)
    x = np.random.default_rng(0).integers(0, V, (32, T))
    trainer.train((x, (x + 1) % V), steps=steps)
    return model


def main():
    comm = world()
    for strategy in sys.argv[2:]:
        run(strategy, Path(sys.argv[1]) / strategy)
    print("RESULT " + json.dumps({"rank": comm.rank}), flush=True)


if __name__ == "__main__":
    main()

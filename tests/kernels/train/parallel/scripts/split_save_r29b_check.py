"""Saving a GPT trained under pp or tp on 2 ranks, as a user does (round 29b).

usage: split_save_r29b_check.py DIR
A GPT of the user's own size, 3 SGD steps under "pp" then "tp". pp: every rank's
``trainer.model.state_dict()`` after train (what ``model.save`` writes). tp:
``trainer.model.save`` (must refuse: the model is split) and ``trainer.whole_state_dict()``
(every rank), saved by rank 0 to DIR/tp.npz. Prints ``RESULT {"rank", "pp", "tp",
"tp_save_error"}``.
"""

import json
import sys
from pathlib import Path

import numpy as np

import skiff
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import world

STEPS = 3


def tokens():
    return np.random.default_rng(0).integers(0, 50, size=(32, 17))


def trainer(strategy):
    skiff.seed(0)
    model = GPT(GPTConfig(vocab_size=50, block_size=16, n_layer=2, n_head=4, n_embd=32))
    return skiff.Trainer(model, strategy=strategy, optimizer="sgd", schedule="constant",
                         lr=0.05, batch_size=8, seed=0, shuffle=False)


def train(strategy):
    tr = trainer(strategy)
    toks = tokens()
    tr.train((toks[:, :-1], toks[:, 1:]), steps=STEPS)
    return tr


def as_lists(state):
    return {k: np.asarray(v).tolist() for k, v in state.items()}


def main(root):
    comm = world()
    out = {"rank": comm.rank, "pp": as_lists(train("pp").model.state_dict())}
    tr = train("tp")
    try:
        tr.model.save(str(root / f"shard{comm.rank}.npz"))
        out["tp_save_error"] = None
    except ValueError as e:
        out["tp_save_error"] = str(e)
    weights = tr.whole_state_dict()
    if comm.rank == 0:
        np.savez(root / "tp.npz", **weights)
    out["tp"] = as_lists(weights)
    # ~1 MB of weights: in a file (two ranks' long stdout lines interleave under mpiexec)
    path = root / f"result{comm.rank}.json"
    path.write_text(json.dumps(out))
    print("RESULT " + json.dumps({"rank": comm.rank, "file": str(path)}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

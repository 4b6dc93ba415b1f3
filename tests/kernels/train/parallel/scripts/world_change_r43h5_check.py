"""Round 43 (h5): resuming on another world size, one launch of 2 ranks.

1. One process (rank 0 alone) trains a tiny GPT (SGD with momentum, constant lr, no
   clipping, no shuffling) and is cut at step 5; both ranks resume it under
   ``TensorParallel(Layout(dp=2, tp=1))``: the dp x tp layout's reader of a one-process
   checkpoint (``relayout.read_one_process``, shared with dp since this round), which no
   test had run. The test compares the losses with a torch loop from the same weights.
2. dp on 2 ranks with augmentations drawn from numpy's and Python's global generators
   (``flips_data.Flips``), cut at step 3: the test resumes it in one process.
3. (round 43 h10) dp on 2 ranks on data that draws nothing (arrays, a weighted sampler's
   loader of a TensorDataset), cut at step 2: the test resumes each in one process, where
   nothing may be said of the global generators.

usage: world_change_r43h5_check.py DIR. Each rank writes ``DIR/rank<r>.json``: the resumed
losses, its log lines; rank 0 also ``DIR/init.npz`` (the GPT's first weights).
"""

import json
import random
import sys
from pathlib import Path

import abort_on_error  # noqa: F401
import numpy as np

import skiff
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.parallel import world
from skiff.kernels.train.parallel.groups import Layout
from skiff.kernels.train.parallel.hybrid import TensorParallel

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from flips_data import Flips, quiet_data  # noqa: E402

V, T = 16, 8


class Lines(NullReporter):
    """Keeps the run's log lines (the resume's notes)."""

    def __init__(self, rank=0, world_size=1):
        self.rank, self.world_size, self.lines = rank, world_size, []

    def log(self, message, *, level="info"):
        self.lines.append(f"{level}: {message}")


def cnn():
    skiff.seed(0)
    return skiff.nn.Sequential(skiff.nn.Conv2d(1, 2, 3, padding=1), skiff.nn.ReLU(),
                               skiff.nn.Flatten(), skiff.nn.Linear(72, 2))


def gpt():
    skiff.seed(0)
    return GPT(GPTConfig(block_size=T, vocab_size=V, n_layer=2, n_head=2, n_embd=16))


def plain(strategy, folder, rep, stop_at=None):
    """A tiny GPT on 32 rows (SGD with momentum, constant lr, no clipping, no shuffling),
    2 epochs of 4 steps; cut at ``stop_at`` or resumed."""
    m = gpt()
    x = np.random.default_rng(0).integers(0, V, (32, T))
    tr = skiff.Trainer(m, strategy=strategy, optimizer=skiff.optim.SGD(
                           m.parameters(), lr=0.05, momentum=0.9), schedule="constant",
                       clip=None, batch_size=8, shuffle=False, seed=0, checkpoint_dir=folder,
                       checkpoint_every=1, resume=stop_at is None, reporter=rep,
                       callbacks=[lambda s: s["step"] == stop_at] if stop_at else None)
    return m, tr.train(Rows(x, (x + 1) % V), epochs=2)


class Rows:
    """The token rows as a user's dataset (arrays draw nothing from the global generators
    and their resume says nothing of them)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def idle_barrier():
    """A barrier that sleeps while rank 0 runs alone (MPI's spins a core)."""
    import time

    from mpi4py import MPI

    req = MPI.COMM_WORLD.Ibarrier()
    while not req.Test():
        time.sleep(0.005)


def main():
    root = Path(sys.argv[1])
    comm = world()
    rank = comm.rank
    np.random.seed(7 + rank)
    random.seed(7 + rank)
    if rank == 0:
        np.savez(root / "init.npz", **{k: np.asarray(v) for k, v in gpt().state_dict().items()})
        plain("single", root / "one", None, stop_at=5)
    idle_barrier()
    rep = Lines(rank, 2)
    _, r = plain(TensorParallel(Layout(dp=2, tp=1)), root / "one", rep)
    out = {"rank": rank, "from_step": (r.resumed or {}).get("from_step"),
           "losses": [h["loss"] for h in r.history], "lines": rep.lines}
    # dp with augmentations from the global generators, cut at step 3 (resumed by the test)
    m = cnn()
    skiff.Trainer(m, strategy="dp", lr=0.02, batch_size=8, seed=0, checkpoint_dir=root / "two",
                  checkpoint_every=1, reporter=Lines(rank, 2),
                  callbacks=[lambda s: s["step"] == 3]).train(Flips(32, 0), epochs=2)
    # round 43 (h10): arrays and a weighted sampler's loader of a TensorDataset draw nothing
    # from the global generators: the test resumes each on one process (the arrays' also as
    # a table and through torch's loader), where nothing may be said of them
    for name, data in quiet_data():
        skiff.seed(0)
        net = skiff.nn.Sequential(skiff.nn.Linear(4, 8), skiff.nn.ReLU(), skiff.nn.Linear(8, 2))
        skiff.Trainer(net, strategy="dp", lr=0.02, batch_size=8, seed=0,
                      checkpoint_dir=root / name, checkpoint_every=1, reporter=Lines(rank, 2),
                      callbacks=[lambda s: s["step"] == 2]).train(data, epochs=1)
    (root / f"rank{rank}.json").write_text(json.dumps(out))
    print("RESULT " + json.dumps({"rank": rank}), flush=True)


if __name__ == "__main__":
    main()
